-- Roles per organization (issue 32): owner, admin, deployer, developer, viewer replace the admin
-- flag. Admins stay admins, and one of them becomes the owner: the creator while still an admin,
-- else the earliest admin. Members become developers: a developer has exactly what a member had
-- (every change outside protected environments; secret values were never shown to anyone).
ALTER TABLE memberships
  ADD COLUMN role text CHECK (role IN ('owner', 'admin', 'deployer', 'developer', 'viewer'));
UPDATE memberships SET role = CASE WHEN admin THEN 'admin' ELSE 'developer' END;
UPDATE memberships m SET role = 'owner'
FROM (
  SELECT DISTINCT ON (mm.organization_id) mm.organization_id, mm.user_id
  FROM memberships mm
  JOIN organizations o ON o.id = mm.organization_id
  WHERE mm.admin
  ORDER BY mm.organization_id, (mm.user_id = o.created_by) DESC, mm.created_at, mm.user_id
) first_admin
WHERE m.organization_id = first_admin.organization_id AND m.user_id = first_admin.user_id;
ALTER TABLE memberships ALTER COLUMN role SET NOT NULL, ALTER COLUMN role SET DEFAULT 'developer';
-- `admin` stays readable (protected environments and many checks ask "owner or admin?"), derived
-- from the role so the two can never disagree.
ALTER TABLE memberships DROP COLUMN admin;
ALTER TABLE memberships ADD COLUMN admin boolean GENERATED ALWAYS AS (role IN ('owner', 'admin')) STORED;

-- Whether viewers read the logs of protected environments (the owner's choice).
ALTER TABLE organizations ADD COLUMN viewers_see_protected_logs boolean NOT NULL DEFAULT true;

-- A member allowed to act, within their role, on one protected environment (a deployer who
-- deploys to production). Grants go with the environment, the user, or (deleted by the
-- organizations module) the membership.
CREATE TABLE environment_grants (
  environment_id uuid NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  granted_by uuid REFERENCES users(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, user_id)
);
CREATE INDEX environment_grants_user ON environment_grants (user_id);

-- Invitations by email with a role; the token is stored only as its hash.
CREATE TABLE invitations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  email text NOT NULL,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'deployer', 'developer', 'viewer')),
  token_hash text NOT NULL UNIQUE,
  invited_by uuid REFERENCES users(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  accepted_by uuid REFERENCES users(id) ON DELETE SET NULL,
  revoked_at timestamptz,
  CHECK (accepted_at IS NULL OR revoked_at IS NULL)
);
-- One open invitation per address and organization (an expired one is revoked when replaced).
CREATE UNIQUE INDEX invitations_open ON invitations (organization_id, lower(email))
  WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- Sessions remember how and from where they began, and when they were last used (idle timeout).
ALTER TABLE sessions
  ADD COLUMN method text NOT NULL DEFAULT 'password',
  ADD COLUMN address text,
  ADD COLUMN user_agent text,
  ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now();
