-- Issue 30: a failing deployment says what happened, a stability window after the first healthy
-- answer, crash loops visible after it.

-- Per application: how long a new web instance may take to answer its health check (seconds;
-- null: the platform's HEALTH_CHECK_TIMEOUT_SECONDS), and how long the new instances must keep
-- running after they are healthy before the deployment completes (null: DEPLOY_STABILITY_WINDOW_SECONDS).
ALTER TABLE applications
  ADD COLUMN health_check_timeout integer CHECK (health_check_timeout BETWEEN 1 AND 3600),
  ADD COLUMN stability_window integer CHECK (stability_window BETWEEN 0 AND 600);

-- Why a deployment failed, as data: the instance, its exit, its last lines of output, what the
-- health check got and on which port, what it listens on instead, and a hint.
ALTER TABLE deployments ADD COLUMN failure jsonb;

-- When an instance last exited on its own (with last_exit, for `ps` and the status view).
ALTER TABLE instances ADD COLUMN last_exit_at timestamptz;

-- A crash's event carries why it ended and the instance's name.
CREATE OR REPLACE FUNCTION slipway_instance_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'crashed' AND OLD.state IS DISTINCT FROM 'crashed' THEN
    PERFORM slipway_record_event(NEW.application_id, 'instance.crashed', NEW.id::text, NEW.state,
      jsonb_build_object('process_type', NEW.process_type, 'restart_count', NEW.restart_count,
        'instance', NEW.process_type || '.' || NEW.ordinal, 'environment_id', NEW.environment_id, 'last_exit', NEW.last_exit));
  ELSIF NEW.restart_count > OLD.restart_count THEN
    PERFORM slipway_record_event(NEW.application_id, 'instance.restarted', NEW.id::text, NEW.state,
      jsonb_build_object('process_type', NEW.process_type, 'restart_count', NEW.restart_count));
  END IF;
  RETURN NULL;
END $$;

-- The webhook events of 0012, plus `instance.crashed` (a crash of a running instance).
CREATE OR REPLACE FUNCTION slipway_webhook_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  org uuid;
  proj uuid;
  outcome text := CASE NEW.status
    WHEN 'building' THEN 'started' WHEN 'deploying' THEN 'started'
    WHEN 'built' THEN 'succeeded' WHEN 'complete' THEN 'succeeded'
    WHEN 'error' THEN 'failed' ELSE NULL END;
  names text[] := '{}';
  rolled_back uuid;
  name text;
BEGIN
  SELECT p.organization_id, p.id INTO org, proj
    FROM applications a JOIN projects p ON p.id = a.project_id WHERE a.id = NEW.application_id;
  IF org IS NULL OR NOT EXISTS (SELECT 1 FROM webhooks WHERE organization_id = org) THEN RETURN NULL; END IF;
  IF NEW.kind = 'image.updated' AND outcome IS NOT NULL THEN names := ARRAY['build.' || outcome];
  ELSIF NEW.kind = 'release.updated' AND outcome IS NOT NULL THEN names := ARRAY['release.' || outcome];
  ELSIF NEW.kind = 'deployment.updated' AND outcome IS NOT NULL THEN
    names := ARRAY['deployment.' || outcome];
    SELECT d.rollback_of INTO rolled_back FROM deployments d WHERE d.id::text = NEW.subject_id;
    IF rolled_back IS NOT NULL THEN names := names || ('rollback.' || outcome); END IF;
  ELSIF NEW.kind IN ('scale.updated', 'autoscale.scaled') THEN names := ARRAY['scale.changed'];
  ELSIF NEW.kind = 'deployment.rolled_back' THEN names := ARRAY['deployment.rolled_back'];
  ELSIF NEW.kind IN ('preview.created', 'preview.deleted') THEN names := ARRAY[NEW.kind];
  ELSIF NEW.kind = 'instance.crashed' THEN names := ARRAY['instance.crashed'];
  END IF;
  FOREACH name IN ARRAY names LOOP
    INSERT INTO webhook_outbox (organization_id, project_id, event, data)
      VALUES (org, proj, name, jsonb_build_object('application_id', NEW.application_id, 'subject_id', NEW.subject_id,
        'status', NEW.status) || NEW.data);
  END LOOP;
  IF array_length(names, 1) > 0 THEN PERFORM pg_notify('slipway_webhooks', ''); END IF;
  RETURN NULL;
END $$;
