-- Autoscaling and scheduled jobs (issue 17).

-- One autoscaling policy per application environment and process type: the sampler loop keeps
-- the process count between min and max, aiming at the target (CPU % of the pod class, or
-- requests per second per instance). `evaluated_at` is the claim that makes each policy run
-- once per sampling interval however many workers sample; the request counters of the last
-- evaluation give the next one its rate.
CREATE TABLE autoscale_policies (
  id                   uuid PRIMARY KEY,
  application_id       uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id       uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  process_type         text NOT NULL,
  min_count            integer NOT NULL CHECK (min_count >= 1),
  max_count            integer NOT NULL CHECK (max_count >= min_count),
  target_cpu_percent   integer CHECK (target_cpu_percent BETWEEN 1 AND 1000),
  target_rps           double precision CHECK (target_rps > 0),
  cooldown_seconds     integer NOT NULL CHECK (cooldown_seconds >= 0),
  evaluated_at         timestamptz,
  last_scaled_at       timestamptz,
  requests_minute      timestamptz,
  requests_seen        bigint,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (application_id, environment_id, process_type),
  CHECK ((target_cpu_percent IS NULL) <> (target_rps IS NULL))
);

-- Every count the autoscaler changed, with why.
CREATE TABLE scale_events (
  id               uuid PRIMARY KEY,
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id   uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  process_type     text NOT NULL,
  from_count       integer NOT NULL,
  to_count         integer NOT NULL,
  reason           text NOT NULL,
  metric           jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scale_events_app_idx ON scale_events (application_id, created_at DESC);

-- Scheduled jobs: a command of the serving release run on a cron schedule. `next_run_at` is
-- the next occurrence (null: not computed yet, the scheduler computes it); a scheduler takes
-- an occurrence by moving `next_run_at` on from the value it read (compare-and-set).
CREATE TABLE cron_entries (
  id               uuid PRIMARY KEY,
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id   uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  name             text NOT NULL,
  schedule         text NOT NULL,
  command          text NOT NULL,
  process_type     text,
  timeout_seconds  integer NOT NULL,
  -- `api` (PUT) or `manifest` (slipway.json of the deployed release; replaced by the next deployment).
  source           text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'manifest')),
  next_run_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (application_id, environment_id, name)
);
CREATE INDEX cron_entries_due_idx ON cron_entries (next_run_at);

-- A run started by a cron entry names it and the occurrence it is for: one run per occurrence.
ALTER TABLE one_off_runs
  ADD COLUMN cron_entry_id uuid REFERENCES cron_entries (id) ON DELETE SET NULL,
  ADD COLUMN scheduled_for timestamptz;
CREATE UNIQUE INDEX one_off_runs_cron_occurrence_idx ON one_off_runs (cron_entry_id, scheduled_for);
CREATE INDEX one_off_runs_cron_idx ON one_off_runs (cron_entry_id, created_at DESC);

-- Cron entries named in a release's slipway.json (`cron`: [{name, schedule, command}]).
ALTER TABLE images ADD COLUMN cron jsonb;

-- A deployment completing brings its release's slipway.json entries to the environment:
-- manifest entries it no longer names go, new ones come (an entry set through the API keeps
-- its name and wins). A changed schedule is recomputed by the scheduler (next_run_at null).
CREATE FUNCTION slipway_sync_manifest_cron() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  entries jsonb;
BEGIN
  IF NEW.status <> 'complete' OR (TG_OP = 'UPDATE' AND OLD.status = 'complete') THEN RETURN NULL; END IF;
  SELECT coalesce(i.cron, '[]'::jsonb) INTO entries
    FROM releases r LEFT JOIN images i ON i.id = r.image_ref WHERE r.id = NEW.release_id;
  entries := coalesce(entries, '[]'::jsonb);
  DELETE FROM cron_entries c
    WHERE c.application_id = NEW.application_id AND c.environment_id = NEW.environment_id AND c.source = 'manifest'
      AND c.name NOT IN (SELECT e->>'name' FROM jsonb_array_elements(entries) e);
  INSERT INTO cron_entries (id, application_id, environment_id, name, schedule, command, timeout_seconds, source, next_run_at)
    SELECT gen_random_uuid(), NEW.application_id, NEW.environment_id, e->>'name', e->>'schedule', e->>'command', 600, 'manifest', NULL
    FROM jsonb_array_elements(entries) e
  ON CONFLICT (application_id, environment_id, name) DO UPDATE
    SET schedule = EXCLUDED.schedule, command = EXCLUDED.command, updated_at = now(),
        next_run_at = CASE WHEN cron_entries.schedule = EXCLUDED.schedule THEN cron_entries.next_run_at END
    WHERE cron_entries.source = 'manifest';
  RETURN NULL;
END $$;
CREATE TRIGGER deployments_manifest_cron AFTER INSERT OR UPDATE OF status ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_sync_manifest_cron();
