-- Issue 27, class 5 (one tenant exhausts what all share): disk quota, garbage collection, fairness.

-- A site administrator's per-organization disk quota in MiB (null: the configured ORG_DISK_QUOTA_MB).
ALTER TABLE organizations ADD COLUMN disk_quota_mb integer;
-- Who created the organization: the pipeline's per-user budget and ORGS_PER_USER_MAX count by it,
-- so creating another organization does not reset a user's share. Earlier organizations are
-- credited to their first admin.
ALTER TABLE organizations ADD COLUMN created_by uuid REFERENCES users(id) ON DELETE SET NULL;
UPDATE organizations o SET created_by = (
  SELECT m.user_id FROM memberships m WHERE m.organization_id = o.id AND m.admin ORDER BY m.created_at LIMIT 1);
CREATE INDEX organizations_created_by ON organizations (created_by);

-- When garbage collection removed the image's artifact and build-storage image (no kept release referenced it).
ALTER TABLE images ADD COLUMN collected_at timestamptz;

-- An organization's measured disk use by kind, refreshed by the storage sweeper and after builds.
CREATE TABLE organization_disk_usage (
  organization_id  uuid PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
  artifacts_bytes  bigint NOT NULL DEFAULT 0,
  images_bytes     bigint NOT NULL DEFAULT 0,
  caches_bytes     bigint NOT NULL DEFAULT 0,
  logs_bytes       bigint NOT NULL DEFAULT 0,
  measured_at      timestamptz NOT NULL DEFAULT now()
);
