import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Paths, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, FieldError, invalidProps, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

type WebhookEvent = Paths['/v1/organizations/{org_slug}/webhooks']['post']['requestBody']['content']['application/json']['events'][number];

/** The events offered when creating a webhook, the ones people most often want first. */
const EVENTS: WebhookEvent[] = [
  'deployment.started',
  'deployment.succeeded',
  'deployment.failed',
  'deployment.rolled_back',
  'rollback.succeeded',
  'build.failed',
  'release.failed',
  'instance.crash_loop',
  'instance.oom',
  'scale.changed',
  'preview.created',
  'application.deleted',
];

/** The organization's webhooks: create, delete, and each one's deliveries with their attempts and a redeliver. */
export function WebhooksPanel({ org }: { org: string }) {
  const path = { params: { path: { org_slug: org } } };
  const hooks = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/webhooks', path)), [org]);
  const [open, setOpen] = useState<string | null>(null);
  const [refusal, setRefusal] = useState<{ url?: string; other?: string } | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      await ok(
        api.POST('/v1/organizations/{org_slug}/webhooks', {
          ...path,
          body: { url: String(data.get('url')).trim(), events: data.getAll('events').map(String) as WebhookEvent[] },
        }),
      );
      setRefusal(null);
      form.reset();
      hooks.reload();
    } catch (e) {
      const aboutUrl = e instanceof ApiError && (e.fields.some((f) => f.field === 'url') || /\burl\b|address/i.test(e.message));
      setRefusal(aboutUrl ? { url: errorText(e) } : { other: errorText(e) });
    }
  };
  return (
    <section aria-labelledby="webhooks-h">
      <h2 id="webhooks-h">Webhooks</h2>
      <Loading state={hooks} what="webhooks" empty="No webhooks yet.">
        {(list) => (
          <ul class="cards">
            {list.map((w) => (
              <li key={w.id} data-webhook={w.url}>
                <p>
                  <code class="wrap">{w.url}</code> <span class="muted">{w.project ? `project ${w.project}` : 'whole organization'}</span>
                </p>
                <p class="muted">{w.events.join(', ')}</p>
                <div class="buttons">
                  <button type="button" aria-expanded={open === w.id} onClick={() => setOpen(open === w.id ? null : w.id)}>
                    Deliveries
                  </button>
                  <ConfirmAction
                    label="Delete"
                    ariaLabel={`Delete webhook ${w.url}`}
                    danger
                    title="Delete this webhook"
                    changes={[{ label: 'Receiver', from: w.url, to: 'no more deliveries' }]}
                    run={() =>
                      ok(
                        api.DELETE('/v1/organizations/{org_slug}/webhooks/{webhook_id}', {
                          params: { path: { org_slug: org, webhook_id: w.id } },
                        }),
                      )
                    }
                    done="Deleted."
                    onDone={hooks.reload}
                  />
                </div>
                {open === w.id && <Deliveries org={org} webhookId={w.id} />}
              </li>
            ))}
          </ul>
        )}
      </Loading>
      <form aria-label="New webhook" onSubmit={create}>
        <label>
          Receiver URL
          <input name="url" type="url" required placeholder="https://hooks.example.com/slipway" {...invalidProps('url', refusal?.url)} />
        </label>
        <FieldError name="url" message={refusal?.url} />
        <fieldset class="events">
          <legend>Events</legend>
          {EVENTS.map((e) => (
            <label key={e} class="check">
              <input type="checkbox" name="events" value={e} defaultChecked={e.startsWith('deployment.')} />
              {e}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create webhook</button>
        <ErrorMessage message={refusal?.other} />
      </form>
    </section>
  );
}

type Delivery = Schemas['WebhookDelivery'];

const STATUS_CLASS: Record<Delivery['status'], string> = { succeeded: 'status-ok', failed: 'status-error', pending: 'status-busy' };

function Deliveries({ org, webhookId }: { org: string; webhookId: string }) {
  const params = { params: { path: { org_slug: org, webhook_id: webhookId } } };
  const deliveries = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/webhooks/{webhook_id}/deliveries', params)), [org, webhookId]);
  return (
    <Loading state={deliveries} what="deliveries">
      {(page) =>
        page.items.length === 0 ? (
          <p class="muted empty">No deliveries yet: one is sent at the next matching event.</p>
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
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
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
                      <td>{last ? (last.response_status !== null ? `HTTP ${last.response_status}` : (last.error ?? 'no answer')) : '—'}</td>
                      <td class="wide-only">{d.attempts.length}</td>
                      <td class="wide-only">{when(d.created)}</td>
                      <td>
                        <ConfirmAction
                          class="compact"
                          label="Redeliver"
                          ariaLabel={`Redeliver ${d.event}`}
                          title={`Redeliver ${d.event}`}
                          changes={[{ label: 'Delivery', from: d.status, to: 'sent again now' }]}
                          run={() =>
                            ok(
                              api.POST('/v1/organizations/{org_slug}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', {
                                params: { path: { org_slug: org, webhook_id: webhookId, delivery_id: d.id } },
                              }),
                            )
                          }
                          done="Sent again."
                          onDone={deliveries.reload}
                        />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )
      }
    </Loading>
  );
}
