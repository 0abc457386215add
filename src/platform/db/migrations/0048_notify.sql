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
