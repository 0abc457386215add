-- Backups of Postgres add-ons (issue 31): base backups (pg_basebackup) in the add-on's own
-- repository beside a continuous WAL archive (archive_command), restores into a new add-on (a
-- fork), and restore drills that prove the latest backup restorable.

CREATE TABLE addon_backups (
  id           uuid PRIMARY KEY,
  addon_id     uuid NOT NULL REFERENCES addons (id) ON DELETE CASCADE,
  -- running: being taken (a platform that died meanwhile leaves it, marked failed at its next start).
  status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
  trigger      text NOT NULL CHECK (trigger IN ('manual', 'scheduled')),
  -- The first WAL file the backup needs (older archived WAL is removed with the backups before it).
  start_wal    text,
  size_bytes   bigint,
  detail       text,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz
);
CREATE INDEX addon_backups_addon ON addon_backups (addon_id, started_at);

-- A fork: the add-on and point it was restored from (kept when the source is purged: as text).
ALTER TABLE addons ADD COLUMN restored_from text;
-- Restore drills: the last one's outcome, and when one last passed ("last proven restorable").
ALTER TABLE addons ADD COLUMN last_drill jsonb;
ALTER TABLE addons ADD COLUMN last_proven_restorable_at timestamptz;
