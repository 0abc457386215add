-- Issue 33: e-mail notification channels, and the crash events a channel can pick.

-- An e-mail channel keeps its `mailto:` recipients in url_sealed like a webhook address.
ALTER TABLE notification_channels DROP CONSTRAINT notification_channels_kind_check;
ALTER TABLE notification_channels ADD CONSTRAINT notification_channels_kind_check CHECK (kind IN ('slack', 'discord', 'email'));

-- A crash also publishes `instance.oom` when the kernel's OOM killer ended it, and `instance.crash_loop`
-- once, on the crash that follows its third restart. The trigger function is rewritten in place (as in
-- 0043) so events other migrations added to it stay.
DO $$
DECLARE
  body text := pg_get_functiondef('slipway_webhook_event()'::regprocedure);
  crashed text := $s$ELSIF NEW.kind = 'instance.crashed' THEN names := ARRAY['instance.crashed'];$s$;
BEGIN
  IF position(crashed IN body) = 0 THEN
    RAISE EXCEPTION 'slipway_webhook_event() no longer publishes instance.crashed as expected';
  END IF;
  EXECUTE replace(body, crashed, $s$ELSIF NEW.kind = 'instance.crashed' THEN
    names := ARRAY['instance.crashed'];
    IF NEW.data->>'last_exit' LIKE 'OOM%' THEN names := names || 'instance.oom'::text; END IF;
    IF NEW.data->>'restart_count' = '3' THEN names := names || 'instance.crash_loop'::text; END IF;$s$);
END $$;

-- Log drains: an organization's (or one application's) runtime, build and deploy logs shipped to a
-- syslog server (RFC 5424 over TCP or TLS), an HTTPS endpoint (JSON lines) or an OTLP/HTTP collector.
CREATE TABLE log_drains (
  id               uuid PRIMARY KEY,
  organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  -- NULL: every application of the organization.
  application_id   uuid REFERENCES applications (id) ON DELETE CASCADE,
  kind             text NOT NULL CHECK (kind IN ('syslog', 'https', 'otlp')),
  name             text NOT NULL,
  -- The address may carry a token: sealed; only `url_hint` is shown.
  url_sealed       text NOT NULL,
  url_hint         text NOT NULL,
  -- https: the shared secret sent in X-Slipway-Drain-Secret; otlp: an optional bearer token.
  secret_sealed    text,
  -- syslog over TLS: the PEM certificate(s) that may sign the server's (NULL: the system's CAs).
  ca_pem           text,
  sources          text[] NOT NULL CHECK (sources <@ ARRAY['runtime', 'build', 'deploy'] AND cardinality(sources) > 0),
  -- What the shippers did (summed over every process): lines sent, lines dropped (buffer full), failed sends.
  lines_sent       bigint NOT NULL DEFAULT 0,
  lines_dropped    bigint NOT NULL DEFAULT 0,
  failed_sends     bigint NOT NULL DEFAULT 0,
  last_error       text,
  last_error_at    timestamptz,
  last_sent_at     timestamptz,
  created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX log_drains_org_idx ON log_drains (organization_id);
