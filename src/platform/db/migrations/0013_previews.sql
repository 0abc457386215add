-- Preview environments (issue 16) and the GitHub App's installations and deployments (issue 19).

-- An environment closed or deleted through the API is kept (records and logs readable) until
-- the retention sweeper removes it; a preview stopped by its project's cap keeps its records
-- and runs nothing until its pull request changes again.
ALTER TABLE environments
  ADD COLUMN deleted_at timestamptz,
  ADD COLUMN stopped_at timestamptz;

-- A project's opt-in: previews are created from the template environment.
CREATE TABLE preview_settings (
  project_id               uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  template_environment_id  uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  max_concurrent           integer NOT NULL DEFAULT 5 CHECK (max_concurrent BETWEEN 1 AND 100),
  copy_secrets             boolean NOT NULL DEFAULT false,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);

-- One row per preview environment: the pull request it follows.
CREATE TABLE previews (
  environment_id   uuid PRIMARY KEY REFERENCES environments (id) ON DELETE CASCADE,
  project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  pr_number        integer NOT NULL,
  repository       text NOT NULL,
  head_sha         text NOT NULL,
  installation_id  bigint,
  -- The services built from the pull request's repository (they get its head commit and a commit status).
  source_application_ids  jsonb NOT NULL DEFAULT '[]',
  active_at        timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX previews_project_idx ON previews (project_id, active_at);

-- The repositories each GitHub App installation covers (from `installation` and
-- `installation_repositories` hook events), full names lower-cased.
CREATE TABLE github_installation_repositories (
  installation_id  bigint NOT NULL,
  repository       text NOT NULL,
  added_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (installation_id, repository)
);
-- Installations the platform has heard of (an installation with no rows above covers nothing).
CREATE TABLE github_installations (
  installation_id  bigint PRIMARY KEY,
  account          text,
  repository_selection text,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- A build → release → deploy chain reported to GitHub's Deployments API (keyed by the chain's
-- image record): the GitHub deployment it created.
CREATE TABLE github_deployment_reports (
  image_id              uuid PRIMARY KEY REFERENCES images (id) ON DELETE CASCADE,
  github_deployment_id  bigint NOT NULL,
  repository            text NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now()
);
