-- Add-ons (issue 31): a Postgres or Redis server per add-on, owned by an organization, attached
-- to application environments. Its credentials are sealed like secrets; its process runs as its
-- own sandbox user, on a loopback port only the attached applications' sandboxes are given.

CREATE TABLE addons (
  id                  uuid PRIMARY KEY,
  organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name                text NOT NULL,
  kind                text NOT NULL CHECK (kind IN ('postgres', 'redis')),
  plan                text NOT NULL,
  -- The host loopback port its sandbox's network helper forwards (ADDONS_PORT_RANGE).
  port                integer NOT NULL UNIQUE,
  -- Sealed JSON: the application's user and password, and the platform's own (Postgres superuser).
  credentials_sealed  text NOT NULL,
  status              text NOT NULL DEFAULT 'creating' CHECK (status IN ('creating', 'running', 'failed', 'stopped', 'deleted')),
  status_detail       text,
  -- The process on record (its shim's hello), for re-adoption after a platform restart.
  pid                 integer,
  start_ticks         text,
  -- Set by a delete: undeletable until purge_after; then its data is removed and the row with it.
  deleted_at          timestamptz,
  purge_after         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
-- A name is taken once per organization, deleted add-ons included (they can come back).
CREATE UNIQUE INDEX addons_organization_name ON addons (organization_id, name);

CREATE TABLE addon_attachments (
  id              uuid PRIMARY KEY,
  addon_id        uuid NOT NULL REFERENCES addons (id) ON DELETE CASCADE,
  -- Deleting an application ends its attachments, never the add-on.
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  variable        text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (addon_id, application_id, environment_id),
  UNIQUE (application_id, environment_id, variable)
);
CREATE INDEX addon_attachments_application ON addon_attachments (application_id, environment_id);

-- An add-on's process runs as a sandbox user of its own, from the same range as applications'.
ALTER TABLE sandbox_uids DROP CONSTRAINT sandbox_uids_pkey;
ALTER TABLE sandbox_uids ALTER COLUMN application_id DROP NOT NULL;
ALTER TABLE sandbox_uids ADD COLUMN addon_id uuid UNIQUE REFERENCES addons (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX sandbox_uids_application ON sandbox_uids (application_id);
ALTER TABLE sandbox_uids ADD CONSTRAINT sandbox_uids_one_owner CHECK (num_nonnulls(application_id, addon_id) = 1);
