-- Log search (`GET /v1/applications/{id}/logs?search=`, issue 35): `line ILIKE '%text%'` scanned every line
-- of the application's window, 0.9 s at 10⁶ lines. A trigram index answers it in milliseconds; the
-- application id is in the same GIN index (btree_gin) so that a word common in other applications' lines
-- does not make the search read theirs. Both extensions are trusted (the database owner may create them).
-- On a server where they cannot be created, search stays a scan and still works: the platform starts.
-- The cost is on writes: a log line costs about 3.7 times as much to insert (bench/README.md, "scale").
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
  CREATE EXTENSION IF NOT EXISTS btree_gin;
  CREATE INDEX app_log_lines_search ON app_log_lines USING gin (application_id, line gin_trgm_ops);
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
  RAISE NOTICE 'log search stays a scan (no trigram index): %', SQLERRM;
END $$;
