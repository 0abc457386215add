-- Issue 33: notification channels of an organization (Slack and Discord incoming webhooks).
-- They read the same outbox as webhooks; their deliveries and attempts are logged like webhooks'.
CREATE TABLE notification_channels (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  kind             text NOT NULL CHECK (kind IN ('slack', 'discord')),
  name             text NOT NULL,
  -- The incoming-webhook URL is a credential: sealed by the secret box; only `url_hint` is shown.
  url_sealed       text NOT NULL,
  url_hint         text NOT NULL,
  events           text[] NOT NULL,
  -- Environment slugs; NULL: every environment.
  environments     text[],
  created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_channels_org_idx ON notification_channels (organization_id);

CREATE TABLE notification_deliveries (
  id               uuid PRIMARY KEY,
  channel_id       uuid NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
  event            text NOT NULL,
  payload          jsonb NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  job_id           text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_deliveries_channel_idx ON notification_deliveries (channel_id, created_at DESC);

CREATE TABLE notification_delivery_attempts (
  id               bigserial PRIMARY KEY,
  delivery_id      uuid NOT NULL REFERENCES notification_deliveries (id) ON DELETE CASCADE,
  response_status  integer,
  error            text,
  duration_ms      integer NOT NULL,
  attempted_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_delivery_attempts_idx ON notification_delivery_attempts (delivery_id, id);

-- The outbox is filled only for organizations that will read it: one with channels counts too.
-- The trigger function is rewritten in place (not redefined here) so events other migrations
-- added to it stay.
DO $$
DECLARE
  body text := pg_get_functiondef('slipway_webhook_event()'::regprocedure);
  guard text := 'NOT EXISTS (SELECT 1 FROM webhooks WHERE organization_id = org)';
BEGIN
  IF position(guard IN body) = 0 THEN
    RAISE EXCEPTION 'slipway_webhook_event() no longer has the expected webhooks guard';
  END IF;
  EXECUTE replace(body, guard, guard || ' AND NOT EXISTS (SELECT 1 FROM notification_channels WHERE organization_id = org)');
END $$;

-- A notification names who asked for the deploy: the audit log's actor of its release/deployment.
CREATE INDEX audit_log_resource_idx ON audit_log (resource_id) WHERE resource_id IS NOT NULL;
