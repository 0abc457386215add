-- One release numbering per application (decisions.md): versions count up across all of an
-- application's environments, so staging v3 and production v3 can no longer both exist; a
-- promotion takes the next number. Existing rows are renumbered deterministically in creation
-- order per application (ties broken by the time-ordered id). Ids are untouched, so every
-- foreign key (deployments.release_id, ...) keeps pointing at the same release.
ALTER TABLE releases DROP CONSTRAINT releases_app_env_version_key;

UPDATE releases AS r SET version = numbered.version
FROM (
  SELECT id, row_number() OVER (PARTITION BY application_id ORDER BY created_at, id)::integer AS version
  FROM releases
) AS numbered
WHERE numbered.id = r.id AND r.version <> numbered.version;

ALTER TABLE releases ADD CONSTRAINT releases_app_version_key UNIQUE (application_id, version);
-- The environment lists (`?environment=`) page through one environment newest first.
CREATE INDEX releases_app_env_version_idx ON releases (application_id, environment_id, version DESC);
