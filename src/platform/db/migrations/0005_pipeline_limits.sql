-- Per-organization pipeline limits an operator (site administrator) may lower.
-- NULL: the configured default (BUILD_TIMEOUT_SECONDS).
ALTER TABLE organizations
  ADD COLUMN build_timeout_seconds integer CHECK (build_timeout_seconds BETWEEN 10 AND 86400);
