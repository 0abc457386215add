-- Alert rules (issue 33): a threshold over what the platform measures, per organization
-- (optionally one application, or one of its environments), judged by the `alerts` job.
CREATE TABLE alert_rules (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  application_id uuid REFERENCES applications(id) ON DELETE CASCADE,
  environment_id uuid REFERENCES environments(id) ON DELETE CASCADE,
  name text NOT NULL,
  metric text NOT NULL CHECK (metric IN ('error_rate', 'p95_latency_ms', 'restarts')),
  threshold double precision NOT NULL,
  window_seconds integer NOT NULL CHECK (window_seconds BETWEEN 1 AND 86400),
  for_seconds integer NOT NULL DEFAULT 0 CHECK (for_seconds BETWEEN 0 AND 86400),
  min_requests integer NOT NULL DEFAULT 20 CHECK (min_requests >= 1),
  -- ok → pending (breached) → firing (breached for `for_seconds`) → resolved (no longer); pending → ok.
  state text NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'pending', 'firing', 'resolved')),
  state_since timestamptz NOT NULL DEFAULT now(),
  last_value double precision,
  evaluated_at timestamptz,
  -- The counters read at the last evaluation (cumulative since `counters_from`) and the deltas
  -- of each evaluation inside the window: the window slides by evaluation, not by whole minutes.
  counters_from timestamptz,
  counters jsonb,
  samples jsonb NOT NULL DEFAULT '[]',
  silenced_until timestamptz,
  created_by uuid REFERENCES users(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (organization_id, name),
  CHECK (environment_id IS NULL OR application_id IS NOT NULL)
);
CREATE INDEX alert_rules_firing ON alert_rules (environment_id) WHERE state = 'firing';

CREATE TABLE alert_transitions (
  id bigserial PRIMARY KEY,
  rule_id uuid NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
  from_state text NOT NULL,
  to_state text NOT NULL,
  value double precision,
  -- false: silenced, or a transition nobody is told about (pending, back to ok).
  notified boolean NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_transitions_rule ON alert_transitions (rule_id, id DESC);

-- Thresholds crossed by a measure the platform watches (a certificate's days left, an
-- organization's disk use against its quota): a row per crossing, so each is published once.
-- A certificate's subject names its expiry (a renewed one starts afresh); a quota's rows go when
-- the use falls back below them.
CREATE TABLE threshold_crossings (
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  subject text NOT NULL,
  level integer NOT NULL,
  crossed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, subject, level)
);
