-- Trust levels do not share build inputs (issue 27, class 3).

-- A variable a pull request from a fork may see: fork previews build and run with these only.
ALTER TABLE config_vars ADD COLUMN previews boolean NOT NULL DEFAULT false;

-- Whose code a preview runs: the pull request's head is the project's repository itself, or a fork.
-- Previews opened before this migration are treated as forks (the least trusted) until their next push.
ALTER TABLE previews ADD COLUMN trust text NOT NULL DEFAULT 'fork' CHECK (trust IN ('fork', 'same_repository'));
ALTER TABLE previews ADD COLUMN head_repository text;

-- The environment an image was built for (its build-time configuration and cache scope). An image
-- built for a preview is released only into that preview, never into another environment.
-- Older images (null) were all built with production's configuration.
ALTER TABLE images ADD COLUMN environment_id uuid;
ALTER TABLE images ADD COLUMN built_for_preview boolean NOT NULL DEFAULT false;
