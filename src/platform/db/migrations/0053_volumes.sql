-- Persistent volumes (issue 31): a named disk of a fixed size per application environment,
-- mounted at a path in one process type's instances. On the local runtime each is an ext4 image
-- file loop-mounted under DATA_DIR/volumes (the size is the file system's); on Kubernetes a
-- PersistentVolumeClaim. Deleting the application or environment keeps the volume (its ids go
-- null) until it is deleted itself.

CREATE TABLE volumes (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  application_id   uuid REFERENCES applications (id) ON DELETE SET NULL,
  environment_id   uuid REFERENCES environments (id) ON DELETE SET NULL,
  name             text NOT NULL,
  -- Where the instances see it: absolute, normalized, never a system directory.
  mount_path       text NOT NULL,
  -- The process type whose (single) instance mounts it.
  process_type     text NOT NULL,
  size_mib         integer NOT NULL CHECK (size_mib > 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX volumes_environment_name ON volumes (application_id, environment_id, name);
CREATE UNIQUE INDEX volumes_environment_mount_path ON volumes (application_id, environment_id, process_type, mount_path);
CREATE INDEX volumes_organization ON volumes (organization_id);
