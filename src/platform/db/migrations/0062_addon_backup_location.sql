-- Where each add-on backup is kept: the add-on's local repository, or the S3-compatible store
-- (BACKUP_S3_*) it was uploaded to. Restores and drills read it from there.
ALTER TABLE addon_backups
  ADD COLUMN location text NOT NULL DEFAULT 'local' CHECK (location IN ('local', 's3'));
