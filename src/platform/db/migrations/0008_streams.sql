-- Streams (issue 11): live log and event streams, application logs, rollbacks, one-off runs.
--
-- Every process (API or worker) writes records; the API learns of changes through
-- PostgreSQL NOTIFY. Triggers send them, so no writer has to remember to.

-- One-off runs: a command in the serving release's image and configuration.
CREATE TABLE one_off_runs (
  id               uuid PRIMARY KEY,
  application_id   uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id   uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  release_id       uuid REFERENCES releases (id) ON DELETE SET NULL,
  command          text NOT NULL,
  process_type     text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'timed_out')),
  exit_code        integer,
  timeout_seconds  integer NOT NULL,
  error_detail     text,
  log_text         text NOT NULL DEFAULT '',
  requested_by     uuid REFERENCES users (id) ON DELETE SET NULL,
  job_id           text,
  started_at       timestamptz,
  finished_at      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX one_off_runs_app_idx ON one_off_runs (application_id, created_at DESC);

-- A rollback is a deployment of an earlier release; it records the release it replaced.
ALTER TABLE deployments ADD COLUMN rollback_of uuid REFERENCES releases (id) ON DELETE SET NULL;

-- Application output, one row per line (already scrubbed of secret values by the runtime).
CREATE TABLE app_log_lines (
  id              bigserial PRIMARY KEY,
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  environment_id  uuid NOT NULL,
  instance_id     text NOT NULL,
  process_type    text NOT NULL,
  stream          text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  line            text NOT NULL,
  logged_at       timestamptz NOT NULL
);
CREATE INDEX app_log_lines_app_idx ON app_log_lines (application_id, id);
CREATE INDEX app_log_lines_time_idx ON app_log_lines (logged_at);

-- What happened to an application, in order (the events stream resumes from its ids).
CREATE TABLE application_events (
  id              bigserial PRIMARY KEY,
  application_id  uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  kind            text NOT NULL,
  subject_id      text NOT NULL,
  status          text,
  data            jsonb NOT NULL DEFAULT '{}',
  at              timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX application_events_app_idx ON application_events (application_id, id);

-- Ids of an application's log lines and events must become visible in order, or a client
-- resuming "after id N" could skip a row a slower transaction commits later: writers of one
-- application take this lock (held to commit) before taking ids.
CREATE FUNCTION slipway_app_sequence_lock(app uuid) RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(7001, hashtext(app::text));
$$;

-- `slipway_records`: '<table>:<id>' whenever a record's log or status changes.
CREATE FUNCTION slipway_notify_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('slipway_records', TG_TABLE_NAME || ':' || NEW.id::text);
  RETURN NULL;
END $$;

CREATE TRIGGER images_notify AFTER UPDATE OF log_text, status ON images
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_record();
CREATE TRIGGER releases_notify AFTER UPDATE OF log_text, status ON releases
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_record();
CREATE TRIGGER deployments_notify AFTER UPDATE OF deploy_log, status ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_record();
CREATE TRIGGER environment_deploys_notify AFTER UPDATE OF status ON environment_deploys
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_record();
CREATE TRIGGER one_off_runs_notify AFTER UPDATE OF log_text, status ON one_off_runs
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_record();

-- Records an application event and wakes its streams (`slipway_events`: application id).
CREATE FUNCTION slipway_record_event(app uuid, event_kind text, subject text, subject_status text, extra jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM slipway_app_sequence_lock(app);
  INSERT INTO application_events (application_id, kind, subject_id, status, data)
    VALUES (app, event_kind, subject, subject_status, extra);
  PERFORM pg_notify('slipway_events', app::text);
END $$;

-- A pipeline record (image, release, deployment, run) created or changing status.
CREATE FUNCTION slipway_status_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_kind text := CASE TG_TABLE_NAME WHEN 'images' THEN 'image.updated' WHEN 'releases' THEN 'release.updated'
    WHEN 'deployments' THEN 'deployment.updated' ELSE 'run.updated' END;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN RETURN NULL; END IF;
  PERFORM slipway_record_event(NEW.application_id, event_kind, NEW.id::text, NEW.status,
    CASE WHEN NEW.error_detail IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error_detail', NEW.error_detail) END);
  RETURN NULL;
END $$;

CREATE TRIGGER images_event AFTER INSERT OR UPDATE OF status ON images
  FOR EACH ROW EXECUTE FUNCTION slipway_status_event();
CREATE TRIGGER releases_event AFTER INSERT OR UPDATE OF status ON releases
  FOR EACH ROW EXECUTE FUNCTION slipway_status_event();
CREATE TRIGGER deployments_event AFTER INSERT OR UPDATE OF status ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_status_event();
CREATE TRIGGER one_off_runs_event AFTER INSERT OR UPDATE OF status ON one_off_runs
  FOR EACH ROW EXECUTE FUNCTION slipway_status_event();

-- Instances: a crash, and a restart after one.
CREATE FUNCTION slipway_instance_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'crashed' AND OLD.state IS DISTINCT FROM 'crashed' THEN
    PERFORM slipway_record_event(NEW.application_id, 'instance.crashed', NEW.id::text, NEW.state,
      jsonb_build_object('process_type', NEW.process_type, 'restart_count', NEW.restart_count));
  ELSIF NEW.restart_count > OLD.restart_count THEN
    PERFORM slipway_record_event(NEW.application_id, 'instance.restarted', NEW.id::text, NEW.state,
      jsonb_build_object('process_type', NEW.process_type, 'restart_count', NEW.restart_count));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER instances_event AFTER UPDATE OF state, restart_count ON instances
  FOR EACH ROW EXECUTE FUNCTION slipway_instance_event();

-- A scale: an environment's process counts or pod classes of the application changed.
CREATE FUNCTION slipway_scale_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.process_counts IS NOT DISTINCT FROM OLD.process_counts
     AND NEW.process_pod_classes IS NOT DISTINCT FROM OLD.process_pod_classes THEN RETURN NULL; END IF;
  PERFORM slipway_record_event(NEW.application_id, 'scale.updated', NEW.environment_id::text, 'scaled',
    jsonb_build_object('environment_id', NEW.environment_id, 'process_counts', NEW.process_counts, 'process_pod_classes', NEW.process_pod_classes));
  RETURN NULL;
END $$;
CREATE TRIGGER environment_services_event AFTER INSERT OR UPDATE ON environment_services
  FOR EACH ROW EXECUTE FUNCTION slipway_scale_event();

-- The application's own scale (production).
CREATE FUNCTION slipway_app_scale_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.process_counts IS NOT DISTINCT FROM OLD.process_counts
     AND NEW.process_pod_classes IS NOT DISTINCT FROM OLD.process_pod_classes THEN RETURN NULL; END IF;
  PERFORM slipway_record_event(NEW.id, 'scale.updated', NEW.id::text, 'scaled',
    jsonb_build_object('process_counts', NEW.process_counts, 'process_pod_classes', NEW.process_pod_classes));
  RETURN NULL;
END $$;
CREATE TRIGGER applications_scale_event AFTER UPDATE OF process_counts, process_pod_classes ON applications
  FOR EACH ROW EXECUTE FUNCTION slipway_app_scale_event();
