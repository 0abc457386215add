-- Isolation of the local runtime (issue 10): each application's builds and processes run
-- as their own unprivileged user, and crashes keep their reason (e.g. an OOM kill).

-- One uid per application, from SANDBOX_UID_RANGE; freed with the application.
CREATE TABLE sandbox_uids (
  application_id  uuid PRIMARY KEY REFERENCES applications (id) ON DELETE CASCADE,
  uid             integer NOT NULL UNIQUE,
  created_at      timestamptz NOT NULL DEFAULT now()
);

-- Why the instance last stopped on its own: `exit code 1`, `signal SIGKILL`, `OOM: exceeded 384 MiB of m1.small`.
ALTER TABLE instances ADD COLUMN last_exit text;

-- Repositories a site administrator saved for an application (a local path, a private
-- host): builds may fetch exactly that value; anything a member saves is checked again at
-- build time (issue 10's source policy).
CREATE TABLE trusted_sources (
  application_id  uuid PRIMARY KEY REFERENCES applications (id) ON DELETE CASCADE,
  repository      text NOT NULL,
  approved_by     uuid REFERENCES users (id) ON DELETE SET NULL,
  approved_at     timestamptz NOT NULL DEFAULT now()
);
