-- The SSH gateway (issues 29 and 34): users' public keys for `git push` over SSH, and the
-- one-use token an exec session is attached with over SSH (Ancla's `ancla ssh`/`ancla shell`).
CREATE TABLE ssh_keys (
  id            uuid PRIMARY KEY,
  user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name          text NOT NULL,
  -- `ssh-ed25519 AAAA...` without its comment: the key as the server compares it.
  public_key    text NOT NULL,
  -- OpenSSH's `SHA256:...`: one key belongs to one user, so a signature names its user.
  fingerprint   text NOT NULL UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX ssh_keys_user ON ssh_keys (user_id, created_at);

-- Only the hash of the token: the token itself is handed once to the client that opened the session.
ALTER TABLE exec_sessions ADD COLUMN ssh_token_hash text;
CREATE UNIQUE INDEX exec_sessions_ssh_token ON exec_sessions (ssh_token_hash) WHERE ssh_token_hash IS NOT NULL;
