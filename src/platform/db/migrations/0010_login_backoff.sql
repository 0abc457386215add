-- Login failures are counted per (account, address) with a growing wait between attempts
-- (issue 20): the time of the last failure decides when the next attempt is allowed.
ALTER TABLE login_failures
  ADD COLUMN last_failed_at timestamptz NOT NULL DEFAULT now();
