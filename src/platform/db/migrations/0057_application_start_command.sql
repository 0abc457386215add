-- An application's start command (issue 34; Render's and Railway's "Start Command"): replaces the
-- web process's command when a release is frozen, for built images and deployed images alike.
-- One line: it is run by `sh -c`, and the release log and app detail show it as is.
ALTER TABLE applications
  ADD COLUMN start_command text
    CHECK (start_command IS NULL OR (length(start_command) BETWEEN 1 AND 4096 AND start_command !~ '[\r\n]'));
