-- Scoped API keys and deploy tokens (issue 32): a key may be limited to an organization, then a
-- project, an application and an environment of it, and to a set of actions. NULL everywhere is
-- the key of before: everything its user can do. Limits cascade away with what they name, so a
-- deleted application never leaves a key whose limit silently widened.
ALTER TABLE api_keys
  ADD COLUMN kind text NOT NULL DEFAULT 'api_key' CHECK (kind IN ('api_key', 'deploy_token', 'cli_login')),
  ADD COLUMN organization_id uuid REFERENCES organizations(id) ON DELETE CASCADE,
  ADD COLUMN project_id uuid REFERENCES projects(id) ON DELETE CASCADE,
  ADD COLUMN application_id uuid REFERENCES applications(id) ON DELETE CASCADE,
  ADD COLUMN environment_id uuid REFERENCES environments(id) ON DELETE CASCADE,
  ADD COLUMN actions text[] CHECK (actions IS NULL OR (cardinality(actions) > 0
    AND actions <@ ARRAY['read', 'deploy', 'config:write', 'scale', 'run', 'manage']::text[])),
  ADD COLUMN last_used_address text,
  ADD CONSTRAINT api_keys_scope_nested CHECK (
    (project_id IS NULL OR organization_id IS NOT NULL)
    AND (application_id IS NULL OR project_id IS NOT NULL)
    AND (environment_id IS NULL OR project_id IS NOT NULL)),
  ADD CONSTRAINT api_keys_deploy_token_shape CHECK (
    kind <> 'deploy_token' OR (application_id IS NOT NULL AND environment_id IS NOT NULL AND actions = ARRAY['deploy']::text[]));

-- One approval per code a CLI's browser login shows: a code is spent once, whoever tries again.
CREATE TABLE cli_login_approvals (
  code_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  api_key_id uuid REFERENCES api_keys(id) ON DELETE SET NULL,
  client text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cli_login_approvals_created ON cli_login_approvals (created_at);
