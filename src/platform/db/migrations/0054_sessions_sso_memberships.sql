-- Sessions (issue 32): how one began is one of a few words; listing a person's sessions newest first.
ALTER TABLE sessions ADD CONSTRAINT sessions_method_check CHECK (method IN ('password', 'oidc'));
CREATE INDEX sessions_user_created ON sessions (user_id, created_at DESC);

-- The issuer whose group claim made (or last raised) a membership; NULL: people chose it (added,
-- invited, role set by an admin). Only such memberships are lowered or removed at the next
-- sign-in through that issuer when the group is gone.
ALTER TABLE memberships ADD COLUMN sso_issuer_id uuid REFERENCES oidc_issuers (id) ON DELETE SET NULL;
CREATE INDEX memberships_sso_issuer ON memberships (sso_issuer_id) WHERE sso_issuer_id IS NOT NULL;

-- When and how each person last signed in (a session opened), for their organizations' admins;
-- sessions themselves are pruned when they end.
ALTER TABLE users
  ADD COLUMN last_sign_in_at timestamptz,
  ADD COLUMN last_sign_in_method text;
