-- Accounts, organizations, projects, applications and configuration.

CREATE TABLE users (
  id             uuid PRIMARY KEY,
  username       text NOT NULL,
  email          text NOT NULL,
  password_hash  text NOT NULL,
  is_admin       boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_key ON users (lower(username));
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE sessions (
  id          uuid PRIMARY KEY,
  token_hash  text NOT NULL UNIQUE,
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE api_keys (
  id            uuid PRIMARY KEY,
  user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name          text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  token_prefix  text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  expires_at    timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

-- Failed logins per account and per address, in fixed windows; shared by every API process.
CREATE TABLE login_failures (
  key              text PRIMARY KEY,
  count            integer NOT NULL,
  window_started   timestamptz NOT NULL
);

CREATE TABLE organizations (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  slug        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT organizations_slug_key UNIQUE (slug)
);

CREATE TABLE memberships (
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  admin            boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE projects (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  slug             text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT projects_org_slug_key UNIQUE (organization_id, slug)
);

CREATE TABLE applications (
  id                           uuid PRIMARY KEY,
  project_id                   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name                         text NOT NULL,
  slug                         text NOT NULL,
  platform                     text NOT NULL DEFAULT 'wind',
  process_counts               jsonb NOT NULL DEFAULT '{}',
  process_pod_classes          jsonb NOT NULL DEFAULT '{}',
  github_repository            text,
  github_repository_is_private boolean NOT NULL DEFAULT false,
  auto_deploy_branch           text,
  subdirectory                 text,
  github_app_installation_id   bigint,
  github_environment_name      text,
  deployment_timeout           integer NOT NULL DEFAULT 180,
  health_check_path            text NOT NULL DEFAULT '/',
  health_check_host            text,
  privileged                   boolean NOT NULL DEFAULT false,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  updated_at                   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT applications_project_slug_key UNIQUE (project_id, slug)
);

-- Configuration at any scope: organization, team, project, environment, application.
-- A secret's value is stored only sealed (value_sealed); plain values in value.
CREATE TABLE config_vars (
  id            uuid PRIMARY KEY,
  scope         text NOT NULL CHECK (scope IN ('organization', 'team', 'project', 'environment', 'application')),
  scope_id      uuid NOT NULL,
  name          text NOT NULL,
  value         text,
  value_sealed  text,
  secret        boolean NOT NULL DEFAULT false,
  buildtime     boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  CHECK ((secret AND value IS NULL AND value_sealed IS NOT NULL) OR (NOT secret AND value IS NOT NULL AND value_sealed IS NULL))
);
CREATE UNIQUE INDEX config_vars_scope_name_key ON config_vars (scope, scope_id, lower(name));

-- Every project has environments; `production` exists from the start. Application-level
-- pipeline endpoints act on the production environment.
CREATE TABLE environments (
  id                  uuid PRIMARY KEY,
  project_id          uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name                text NOT NULL,
  slug                text NOT NULL,
  env_type            text NOT NULL DEFAULT 'production' CHECK (env_type IN ('production', 'staging', 'development', 'preview')),
  auto_deploy_branch  text,
  protected           boolean NOT NULL DEFAULT false,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT environments_project_slug_key UNIQUE (project_id, slug)
);
