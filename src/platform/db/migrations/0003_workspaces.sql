-- Workspaces (= organizations), teams, and per-environment settings and deploys.

-- A team groups members of one workspace; projects may belong to a team.
CREATE TABLE teams (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  slug             text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT teams_org_slug_key UNIQUE (organization_id, slug),
  CONSTRAINT teams_org_id_key UNIQUE (organization_id, id)
);

-- Team members are members of the workspace: leaving the workspace leaves its teams.
CREATE TABLE team_members (
  team_id          uuid NOT NULL,
  organization_id  uuid NOT NULL,
  user_id          uuid NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, user_id),
  FOREIGN KEY (organization_id, team_id) REFERENCES teams (organization_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organization_id, user_id) REFERENCES memberships (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX team_members_user_idx ON team_members (user_id);

ALTER TABLE projects ADD COLUMN team_id uuid REFERENCES teams (id) ON DELETE SET NULL;
CREATE INDEX projects_team_idx ON projects (team_id);

-- Per-environment process settings of a service, overlaid on the application's own.
CREATE TABLE environment_services (
  environment_id       uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  application_id       uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  process_counts       jsonb NOT NULL DEFAULT '{}',
  process_pod_classes  jsonb NOT NULL DEFAULT '{}',
  updated_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, application_id)
);

-- A deploy of an environment (or a promotion into it): one pipeline run per service,
-- tracked together; complete when every service's deployment completes, error when any fails.
CREATE TABLE environment_deploys (
  id                     uuid PRIMARY KEY,
  environment_id         uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  kind                   text NOT NULL DEFAULT 'deploy' CHECK (kind IN ('deploy', 'promote')),
  source_environment_id  uuid REFERENCES environments (id) ON DELETE SET NULL,
  requested_by           uuid REFERENCES users (id) ON DELETE SET NULL,
  status                 text NOT NULL DEFAULT 'deploying' CHECK (status IN ('deploying', 'complete', 'error')),
  complete               boolean NOT NULL DEFAULT false,
  error                  boolean NOT NULL DEFAULT false,
  error_detail           text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX environment_deploys_env_created_idx ON environment_deploys (environment_id, created_at DESC);

-- Each service of an environment deploy and the pipeline records it produced so far.
CREATE TABLE environment_deploy_services (
  environment_deploy_id  uuid NOT NULL REFERENCES environment_deploys (id) ON DELETE CASCADE,
  application_id         uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  position               integer NOT NULL,
  image_id               uuid REFERENCES images (id) ON DELETE SET NULL,
  release_id             uuid REFERENCES releases (id) ON DELETE SET NULL,
  deployment_id          uuid REFERENCES deployments (id) ON DELETE SET NULL,
  error_detail           text,
  PRIMARY KEY (environment_deploy_id, application_id)
);
CREATE INDEX environment_deploy_services_deployment_idx ON environment_deploy_services (deployment_id);
