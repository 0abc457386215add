-- Issue 34: `git push` to the platform. An image built from a push reads the application's
-- repository on this server (DATA_DIR/git), not its github_repository.
ALTER TABLE images ADD COLUMN pushed boolean NOT NULL DEFAULT false;

-- Each application's git remote: whether a push that is not a fast-forward is accepted.
CREATE TABLE git_remotes (
  application_id   uuid PRIMARY KEY REFERENCES applications (id) ON DELETE CASCADE,
  allow_force_push boolean NOT NULL DEFAULT false,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
