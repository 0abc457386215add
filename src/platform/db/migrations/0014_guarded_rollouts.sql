-- Guarded rollouts (issue 17): a deployment that watches its own effect and rolls itself back.

-- A deployment the guard rolled back: it completed, then breached a threshold within its watch window.
ALTER TABLE deployments DROP CONSTRAINT deployments_status_check;
ALTER TABLE deployments ADD CONSTRAINT deployments_status_check
  CHECK (status IN ('queued', 'deploying', 'complete', 'error', 'rolled_back'));

-- The guard settings of an application environment (no row: no guard).
CREATE TABLE application_guards (
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id   uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  window_seconds   integer NOT NULL CHECK (window_seconds BETWEEN 1 AND 86400),
  -- Thresholds; null: that measure is not watched.
  max_error_ratio  double precision CHECK (max_error_ratio > 0 AND max_error_ratio <= 1),
  max_p95_factor   double precision CHECK (max_p95_factor >= 1),
  max_restarts     integer CHECK (max_restarts >= 0),
  -- Ratios are judged only once the window has seen this many requests.
  min_requests     integer NOT NULL CHECK (min_requests >= 1),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (application_id, environment_id)
);

-- One watch per guarded deployment: the settings it started with, the counters at its start, its verdict.
CREATE TABLE deployment_guards (
  deployment_id          uuid PRIMARY KEY REFERENCES deployments (id) ON DELETE CASCADE,
  application_id         uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id         uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  settings               jsonb NOT NULL,
  status                 text NOT NULL DEFAULT 'watching'
                         CHECK (status IN ('watching', 'passed', 'rolled_back', 'breached', 'superseded')),
  started_at             timestamptz NOT NULL DEFAULT now(),
  watch_until            timestamptz NOT NULL,
  -- The edge's counters of the environment when the watch started (subtracted from later reads).
  start_counts           jsonb NOT NULL,
  -- The previous release's last window (whole minutes before the start): its latency histogram.
  baseline_counts        jsonb NOT NULL,
  measures               jsonb,
  breach                 text,
  rollback_deployment_id uuid REFERENCES deployments (id) ON DELETE SET NULL,
  checked_at             timestamptz
);
CREATE INDEX deployment_guards_watching ON deployment_guards (watch_until) WHERE status = 'watching';

-- The edge's counters of an application environment over [from, to) as {requests, classes, buckets}.
CREATE FUNCTION slipway_request_counts(app uuid, env uuid, from_minute timestamptz, to_minute timestamptz)
RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'requests', coalesce(sum(requests), 0),
    'classes', coalesce((SELECT jsonb_agg(s ORDER BY i) FROM (
        SELECT i, sum(v) AS s FROM request_stats r2, unnest(r2.status_classes) WITH ORDINALITY AS u(v, i)
        WHERE r2.application_id = app AND r2.environment_id = env AND r2.minute >= from_minute AND r2.minute < to_minute
        GROUP BY i) c), '[]'::jsonb),
    'buckets', coalesce((SELECT jsonb_agg(s ORDER BY i) FROM (
        SELECT i, sum(v) AS s FROM request_stats r2, unnest(r2.latency_buckets) WITH ORDINALITY AS u(v, i)
        WHERE r2.application_id = app AND r2.environment_id = env AND r2.minute >= from_minute AND r2.minute < to_minute
        GROUP BY i) b), '[]'::jsonb))
  FROM request_stats r
  WHERE r.application_id = app AND r.environment_id = env AND r.minute >= from_minute AND r.minute < to_minute
$$;

-- A deployment (not a rollback) completing in a guarded environment starts its watch, in the same
-- transaction: no worker has to remember it, and a restart cannot lose it.
CREATE FUNCTION slipway_start_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  g application_guards;
  this_minute timestamptz := date_trunc('minute', now());
BEGIN
  SELECT * INTO g FROM application_guards WHERE application_id = NEW.application_id AND environment_id = NEW.environment_id;
  IF NOT FOUND THEN RETURN NULL; END IF;
  INSERT INTO deployment_guards (deployment_id, application_id, environment_id, settings, watch_until, start_counts, baseline_counts)
  VALUES (NEW.id, NEW.application_id, NEW.environment_id,
    jsonb_build_object('window_seconds', g.window_seconds, 'max_error_ratio', g.max_error_ratio,
      'max_p95_factor', g.max_p95_factor, 'max_restarts', g.max_restarts, 'min_requests', g.min_requests),
    now() + make_interval(secs => g.window_seconds),
    slipway_request_counts(NEW.application_id, NEW.environment_id, this_minute, 'infinity'),
    slipway_request_counts(NEW.application_id, NEW.environment_id,
      this_minute - make_interval(mins => greatest(1, ceil(g.window_seconds / 60.0)::int)), this_minute))
  ON CONFLICT (deployment_id) DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER deployments_start_guard AFTER UPDATE OF status ON deployments
  FOR EACH ROW WHEN (NEW.status = 'complete' AND OLD.status IS DISTINCT FROM 'complete' AND NEW.rollback_of IS NULL)
  EXECUTE FUNCTION slipway_start_guard();
