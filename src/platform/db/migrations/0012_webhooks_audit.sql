-- Outbound webhooks and the audit log (issue 16).

-- An organization's (optionally one project's) subscription to platform events.
CREATE TABLE webhooks (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  project_id       uuid REFERENCES projects (id) ON DELETE CASCADE,
  url              text NOT NULL,
  events           text[] NOT NULL,
  -- The HMAC key, sealed by the platform's secret box; shown once at creation.
  secret_sealed    text NOT NULL,
  created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_org_idx ON webhooks (organization_id);

-- Events waiting to be fanned out to the webhooks that want them. Written in the
-- transaction that produced the event (the outbox), emptied by the dispatcher.
CREATE TABLE webhook_outbox (
  id               bigserial PRIMARY KEY,
  organization_id  uuid NOT NULL,
  project_id       uuid,
  event            text NOT NULL,
  data             jsonb NOT NULL,
  occurred_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One event for one webhook; its id is the X-Slipway-Delivery header (kept on redelivery).
CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY,
  webhook_id       uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event            text NOT NULL,
  payload          jsonb NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  job_id           text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_hook_idx ON webhook_deliveries (webhook_id, created_at DESC);

-- Each try of a delivery: the receiver's status code, or why there was none.
CREATE TABLE webhook_delivery_attempts (
  id               bigserial PRIMARY KEY,
  delivery_id      uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  response_status  integer,
  error            text,
  duration_ms      integer NOT NULL,
  attempted_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_delivery_attempts_idx ON webhook_delivery_attempts (delivery_id, id);

-- The pipeline's application events, as webhook event names, into the outbox (only when
-- the organization has webhooks: no outbox rows nobody will read).
CREATE FUNCTION slipway_webhook_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
  -- A guard's automatic rollback (issue 17): the deployment it judged, as its own event.
  ELSIF NEW.kind = 'deployment.rolled_back' THEN names := ARRAY['deployment.rolled_back'];
  ELSIF NEW.kind IN ('preview.created', 'preview.deleted') THEN names := ARRAY[NEW.kind];
  END IF;
  FOREACH name IN ARRAY names LOOP
    INSERT INTO webhook_outbox (organization_id, project_id, event, data)
      VALUES (org, proj, name, jsonb_build_object('application_id', NEW.application_id, 'subject_id', NEW.subject_id,
        'status', NEW.status) || NEW.data);
  END LOOP;
  IF array_length(names, 1) > 0 THEN PERFORM pg_notify('slipway_webhooks', ''); END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER application_events_webhooks AFTER INSERT ON application_events
  FOR EACH ROW EXECUTE FUNCTION slipway_webhook_event();

-- Who changed what through the API; one row per changing request, written in its transaction.
CREATE TABLE audit_log (
  id               bigserial PRIMARY KEY,
  organization_id  uuid REFERENCES organizations (id) ON DELETE SET NULL,
  actor_user_id    uuid REFERENCES users (id) ON DELETE SET NULL,
  actor_username   text,
  credential_kind  text NOT NULL CHECK (credential_kind IN ('api_key', 'session', 'signature', 'password', 'none')),
  credential_id    text,
  action           text NOT NULL,
  resource_type    text NOT NULL,
  resource_id      text,
  client_address   text,
  request_id       text NOT NULL,
  before           jsonb,
  after            jsonb,
  at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_org_idx ON audit_log (organization_id, id DESC);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_user_id, id DESC);
CREATE INDEX audit_log_time_idx ON audit_log (at);
