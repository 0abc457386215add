-- Single sign-on with OpenID Connect (issue 32). An operator (a site administrator) configures
-- issuers; people sign in through them with the authorization code flow and PKCE, and are
-- created on their first sign-in. The client secret is sealed like every other secret.
CREATE TABLE oidc_issuers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- In the sign-in URL (/v1/auth/oidc/{name}/start) and the admin API.
  name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,39}$'),
  display_name text NOT NULL,
  discovery_url text NOT NULL,
  client_id text NOT NULL,
  client_secret_sealed text NOT NULL,
  -- Lower-case e-mail domains allowed to sign in; empty: any domain the issuer vouches for.
  allowed_email_domains text[] NOT NULL DEFAULT '{}',
  -- The ID token claim holding the person's groups (e.g. `groups`); NULL: groups are not read.
  group_claim text,
  -- Scopes asked beside `openid email profile` (e.g. `groups`).
  extra_scopes text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A group the issuer puts in its group claim grants a role on an organization at each sign-in.
-- The role is text so the roles of issue 32 (owner, admin, deployer, developer, viewer) map as they land.
CREATE TABLE oidc_group_mappings (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  issuer_id uuid NOT NULL REFERENCES oidc_issuers (id) ON DELETE CASCADE,
  group_value text NOT NULL,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  role text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (issuer_id, group_value, organization_id)
);

-- Which user an issuer's subject is: the link survives an e-mail change at the issuer.
CREATE TABLE oidc_identities (
  issuer_id uuid NOT NULL REFERENCES oidc_issuers (id) ON DELETE CASCADE,
  subject text NOT NULL,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (issuer_id, subject)
);
CREATE INDEX oidc_identities_user ON oidc_identities (user_id);

-- A sign-in under way: its state (hashed; the browser holds it in a cookie too), nonce and PKCE
-- verifier (sealed), spent once by the callback, gone after a few minutes either way.
CREATE TABLE oidc_sign_ins (
  state_hash text PRIMARY KEY,
  issuer_id uuid NOT NULL REFERENCES oidc_issuers (id) ON DELETE CASCADE,
  nonce text NOT NULL,
  code_verifier_sealed text NOT NULL,
  return_to text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_sign_ins_expires ON oidc_sign_ins (expires_at);

-- Sign-ins through an issuer are audited as `oidc`.
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS audit_log_credential_kind_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_credential_kind_check
  CHECK (credential_kind IN ('api_key', 'session', 'signature', 'password', 'oidc', 'none'));
