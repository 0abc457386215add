-- One-off runs carry a failure code too (issue 18), like images, releases and deployments:
-- command_failed, command_timeout, oom, interrupted, ... Null unless failed or timed out.
ALTER TABLE one_off_runs ADD COLUMN error_code text;
