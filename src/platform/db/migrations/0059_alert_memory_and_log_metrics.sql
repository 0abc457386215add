-- Alert rules over memory near the limit and a log pattern's count (issue 33).

-- The largest share of its own memory limit any instance of the application environment used
-- at the sample (percent; null when no instance has a limit). A sum of usage over a sum of limits
-- would hide the one instance about to be killed, so the runtime takes the maximum per instance,
-- each against the limit it was started with.
ALTER TABLE metric_samples ADD COLUMN memory_percent_max double precision;

ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_metric_check;
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_metric_check
  CHECK (metric IN ('error_rate', 'p95_latency_ms', 'restarts', 'memory_percent', 'log_matches'));
-- `log_matches` counts the runtime log lines of one application holding `pattern` (a plain
-- substring, never a regular expression: nothing to backtrack), optionally ignoring case.
ALTER TABLE alert_rules ADD COLUMN pattern text CHECK (char_length(pattern) BETWEEN 1 AND 200);
ALTER TABLE alert_rules ADD COLUMN ignore_case boolean NOT NULL DEFAULT false;
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_pattern_for_log_matches
  CHECK ((metric = 'log_matches') = (pattern IS NOT NULL) AND (metric <> 'log_matches' OR application_id IS NOT NULL));

-- Lines matched by each `log_matches` rule since it was made, counted where the lines are read
-- (the processes that run the instances) and added here in batches; the evaluator reads it as
-- a cumulative counter like the edge's.
CREATE TABLE alert_log_matches (
  rule_id uuid PRIMARY KEY REFERENCES alert_rules(id) ON DELETE CASCADE,
  matches bigint NOT NULL DEFAULT 0
);
-- What the log counter asks for each application whose lines it reads, every few seconds.
CREATE INDEX alert_rules_log_matches ON alert_rules (application_id) WHERE metric = 'log_matches';
