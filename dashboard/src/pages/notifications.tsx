import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Paths, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, FieldError, invalidProps, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

type CreateBody = Paths['/v1/organizations/{org_slug}/notification-channels']['post']['requestBody']['content']['application/json'];
type EventName = CreateBody['events'][number];
type Delivery = Schemas['NotificationDelivery'];

const KINDS: Array<{ kind: CreateBody['kind']; label: string; placeholder: string }> = [
  { kind: 'slack', label: 'Slack', placeholder: 'https://hooks.slack.com/services/…' },
  { kind: 'discord', label: 'Discord', placeholder: 'https://discord.com/api/webhooks/…' },
  { kind: 'email', label: 'E-mail', placeholder: 'mailto:ops@example.com,oncall@example.com' },
];

/** The events offered first: what people most often want told. */
const EVENTS: EventName[] = [
  'deployment.failed',
  'deployment.succeeded',
  'deployment.rolled_back',
  'build.failed',
  'release.failed',
  'instance.crash_loop',
  'instance.oom',
  'alert.firing',
  'alert.resolved',
];

const STATUS_CLASS: Record<Delivery['status'], string> = { succeeded: 'status-ok', failed: 'status-error', pending: 'status-busy' };

/**
 * Notification channels (Slack, Discord, e-mail): create with events and environments, send a
 * test, each one's deliveries with their answers, delete through the confirmation. Channels
 * cannot be edited in the API: delete and create again.
 */
export function NotificationsSection({ org }: { org: string }) {
  const path = { params: { path: { org_slug: org } } };
  const channels = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/notification-channels', path)), [org]);
  const [open, setOpen] = useState<string | null>(null);
  // A test sent: the open deliveries list loads again (remounts) to show it.
  const [sentTests, setSentTests] = useState(0);
  const [kind, setKind] = useState<CreateBody['kind']>('slack');
  const [refusal, setRefusal] = useState<{ url?: string; other?: string } | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const environments = String(data.get('environments') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    try {
      const created = await ok(
        api.POST('/v1/organizations/{org_slug}/notification-channels', {
          ...path,
          body: {
            kind,
            name: String(data.get('name')).trim() || undefined,
            url: String(data.get('url')).trim(),
            events: data.getAll('events').map(String) as EventName[],
            ...(environments.length > 0 ? { environments } : {}),
          },
        }),
      );
      setRefusal(null);
      form.reset();
      setOpen(created.id);
      channels.reload();
    } catch (e) {
      const aboutUrl = e instanceof ApiError && (e.fields.some((f) => f.field === 'url') || /\burl\b|address/i.test(e.message));
      setRefusal(aboutUrl ? { url: errorText(e) } : { other: errorText(e) });
    }
  };
  return (
    <>
      <section aria-labelledby="channels-h">
        <h2 id="channels-h">Channels</h2>
        <Loading state={channels} what="channels" empty="No notification channels yet: add one below.">
          {(list) => (
            <ul class="cards">
              {list.map((c) => (
                <li key={c.id} data-channel={c.name}>
                  <p>
                    <strong>{c.name}</strong> <span class="env">{c.kind}</span> <code class="wrap">{c.url}</code>
                  </p>
                  <p class="muted">
                    {c.events.join(', ')} · {c.environments ? `environments: ${c.environments.join(', ')}` : 'every environment'}
                  </p>
                  <div class="buttons">
                    <TestButton org={org} channelId={c.id} name={c.name} onSent={() => (setOpen(c.id), setSentTests((n) => n + 1))} />
                    <button type="button" aria-expanded={open === c.id} onClick={() => setOpen(open === c.id ? null : c.id)}>
                      Deliveries
                    </button>
                    <ConfirmAction
                      label="Delete"
                      ariaLabel={`Delete channel ${c.name}`}
                      danger
                      title={`Delete the channel ${c.name}`}
                      changes={[{ label: 'Channel', from: `${c.kind} ${c.url}`, to: 'no more notifications' }]}
                      run={() =>
                        ok(
                          api.DELETE('/v1/organizations/{org_slug}/notification-channels/{channel_id}', {
                            params: { path: { org_slug: org, channel_id: c.id } },
                          }),
                        )
                      }
                      done="Deleted."
                      onDone={channels.reload}
                    />
                  </div>
                  {open === c.id && <Deliveries key={sentTests} org={org} channelId={c.id} />}
                </li>
              ))}
            </ul>
          )}
        </Loading>
      </section>
      <section aria-labelledby="new-channel-h">
        <h2 id="new-channel-h">New channel</h2>
        <form aria-labelledby="new-channel-h" onSubmit={create}>
          <label>
            Kind
            <select name="kind" value={kind} onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value as CreateBody['kind'])}>
              {KINDS.map((k) => (
                <option key={k.kind} value={k.kind}>
                  {k.label}
                </option>
              ))}
            </select>
          </label>
          <label>
            Name
            <input name="name" maxLength={100} placeholder="ops" />
          </label>
          <label>
            {kind === 'email' ? 'Recipients' : 'Webhook address'}
            <input
              name="url"
              required
              placeholder={KINDS.find((k) => k.kind === kind)!.placeholder}
              {...invalidProps('channel-url', refusal?.url)}
            />
          </label>
          <FieldError name="channel-url" message={refusal?.url} />
          <label>
            Only these environments (comma-separated slugs; empty: every one)
            <input name="environments" placeholder="production" />
          </label>
          <fieldset class="events">
            <legend>Events</legend>
            {EVENTS.map((e) => (
              <label key={e} class="check">
                <input type="checkbox" name="events" value={e} defaultChecked={e === 'deployment.failed' || e === 'alert.firing'} />
                {e}
              </label>
            ))}
          </fieldset>
          <button type="submit">Add channel</button>
          <ErrorMessage message={refusal?.other} />
        </form>
      </section>
    </>
  );
}

function TestButton({ org, channelId, name, onSent }: { org: string; channelId: string; name: string; onSent: () => void }) {
  const [state, setState] = useState<{ busy: boolean; result: string | null; failed: boolean }>({
    busy: false,
    result: null,
    failed: false,
  });
  const test = async () => {
    setState({ busy: true, result: null, failed: false });
    try {
      await ok(
        api.POST('/v1/organizations/{org_slug}/notification-channels/{channel_id}/test', {
          params: { path: { org_slug: org, channel_id: channelId } },
        }),
      );
      setState({ busy: false, result: 'Test sent: see its delivery below.', failed: false });
      onSent();
    } catch (e) {
      setState({ busy: false, result: errorText(e), failed: true });
    }
  };
  return (
    <span class="confirm-action">
      <button type="button" disabled={state.busy} aria-label={`Send test to ${name}`} onClick={() => void test()}>
        Send test
      </button>
      {state.result && (
        <span class={state.failed ? 'result error' : 'result ok'} role={state.failed ? 'alert' : 'status'}>
          {state.result}
        </span>
      )}
    </span>
  );
}

function Deliveries({ org, channelId }: { org: string; channelId: string }) {
  const params = { params: { path: { org_slug: org, channel_id: channelId } } };
  const deliveries = useLoad(
    () => ok(api.GET('/v1/organizations/{org_slug}/notification-channels/{channel_id}/deliveries', params)),
    [org, channelId],
  );
  // While a delivery is still pending the dispatcher is at work: look again shortly.
  const pending = deliveries.data?.items.some((d) => d.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending || deliveries.loading) return;
    const timer = setTimeout(deliveries.reload, 1000);
    return () => clearTimeout(timer);
  }, [pending, deliveries.loading, deliveries.data]);
  return (
    <Loading state={deliveries} what="deliveries">
      {(page) =>
        page.items.length === 0 ? (
          <p class="muted empty">No deliveries yet: one is sent at the next matching event, or press Send test.</p>
        ) : (
          <div class="table-scroll">
            <table aria-label="Deliveries">
              <thead>
                <tr>
                  <th>Event</th>
                  <th>Status</th>
                  <th>Last answer</th>
                  <th class="wide-only">Attempts</th>
                  <th class="wide-only">When</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((d) => {
                  const last = d.attempts.at(-1);
                  return (
                    <tr key={d.id} data-delivery={d.event}>
                      <td>
                        <code>{d.event}</code>
                      </td>
                      <td>
                        <span class={`status ${STATUS_CLASS[d.status]}`}>{d.status}</span>
                      </td>
                      <td>
                        {last ? (last.response_status !== null ? `answer ${last.response_status}` : (last.error ?? 'no answer')) : '—'}
                      </td>
                      <td class="wide-only">{d.attempts.length}</td>
                      <td class="wide-only">{when(d.created)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <button type="button" class="link" onClick={deliveries.reload}>
              Refresh
            </button>
          </div>
        )
      }
    </Loading>
  );
}
