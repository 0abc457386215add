-- Failures carry a stable code (issue 18) next to their human `error_detail`, so code and API
-- clients decide on `error_code` (build_failed, crash_loop, health_check_failed, ...) instead of
-- on message text. Null while not failed, and for records that failed before this migration.
ALTER TABLE images ADD COLUMN error_code text;
ALTER TABLE releases ADD COLUMN error_code text;
ALTER TABLE deployments ADD COLUMN error_code text;
