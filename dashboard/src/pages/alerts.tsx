import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Paths, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, FieldError, invalidProps, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { useOrganizationApps } from './org-apps.js';

type CreateBody = Paths['/v1/organizations/{org_slug}/alert-rules']['post']['requestBody']['content']['application/json'];
type Rule = Schemas['AlertRule'];

const METRICS: Array<{ metric: CreateBody['metric']; label: string }> = [
  { metric: 'error_rate', label: 'Error rate (share of 5xx, 0 to 1)' },
  { metric: 'p95_latency_ms', label: '95th percentile latency (ms)' },
  { metric: 'restarts', label: 'Crash restarts' },
  { metric: 'memory_percent', label: 'Memory used (% of the limit, 0 to 100)' },
  { metric: 'log_matches', label: 'Log lines holding a text (needs an application)' },
];
const STATE_CLASS: Record<Rule['state'], string> = {
  ok: 'status-ok',
  resolved: 'status-ok',
  pending: 'status-busy',
  firing: 'status-error',
};
const SILENCES = [
  { seconds: 3600, label: '1 hour' },
  { seconds: 4 * 3600, label: '4 hours' },
  { seconds: 86400, label: '1 day' },
  { seconds: 7 * 86400, label: '1 week' },
];

/**
 * Alert rules with their state and last value, firing ones first; create, a rule's history,
 * silence for a while or lift it, delete through the confirmation. Rules cannot be edited in
 * the API: delete and create again.
 */
export function AlertsSection({ org }: { org: string }) {
  const path = { params: { path: { org_slug: org } } };
  const rules = useLoad(async () => {
    const list = await ok(api.GET('/v1/organizations/{org_slug}/alert-rules', path));
    const order = { firing: 0, pending: 1, resolved: 2, ok: 3 };
    return [...list].sort((a, b) => order[a.state] - order[b.state]);
  }, [org]);
  const apps = useOrganizationApps(org);
  const [metric, setMetric] = useState<CreateBody['metric']>('error_rate');
  const [refusal, setRefusal] = useState<{ field?: string; message: string } | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const number = (name: string) => (String(data.get(name) ?? '').trim() === '' ? undefined : Number(data.get(name)));
    const text = (name: string) => String(data.get(name) ?? '').trim() || undefined;
    const logs = metric === 'log_matches';
    try {
      await ok(
        api.POST('/v1/organizations/{org_slug}/alert-rules', {
          ...path,
          body: {
            name: String(data.get('name')).trim(),
            metric,
            threshold: Number(data.get('threshold')),
            window_seconds: number('window_seconds'),
            for_seconds: number('for_seconds'),
            application_id: text('application_id'),
            pattern: logs ? text('pattern') : undefined,
            ignore_case: logs ? data.get('ignore_case') === 'on' : undefined,
          },
        }),
      );
      setRefusal(null);
      form.reset();
      setMetric('error_rate');
      rules.reload();
    } catch (e) {
      const field = e instanceof ApiError ? e.fields[0]?.field.replace(/^\//, '') : undefined;
      setRefusal({ field, message: errorText(e) });
    }
  };
  const fieldError = (name: string) =>
    refusal && (refusal.field === name || (name === 'name' && /already|exists|taken/i.test(refusal.message))) ? refusal.message : undefined;
  const shownElsewhere =
    refusal && ['name', 'threshold', 'window_seconds', 'for_seconds', 'pattern', 'application_id'].some((n) => fieldError(n));
  return (
    <>
      <section aria-labelledby="rules-h">
        <h2 id="rules-h">Rules</h2>
        <Loading state={rules} what="alert rules" empty="No alert rules yet: add one below.">
          {(list) => (
            <ul class="cards">
              {list.map((r) => (
                <RuleCard key={r.id} org={org} rule={r} onChanged={rules.reload} />
              ))}
            </ul>
          )}
        </Loading>
      </section>
      <section aria-labelledby="new-rule-h">
        <h2 id="new-rule-h">New rule</h2>
        <form aria-labelledby="new-rule-h" onSubmit={create}>
          <label>
            Name
            <input
              name="name"
              required
              pattern="[a-z0-9][a-z0-9._\-]*"
              placeholder="api-errors"
              {...invalidProps('rule-name', fieldError('name'))}
            />
          </label>
          <FieldError name="rule-name" message={fieldError('name')} />
          <label>
            Metric
            <select
              name="metric"
              value={metric}
              onChange={(e) => setMetric((e.currentTarget as HTMLSelectElement).value as CreateBody['metric'])}
            >
              {METRICS.map((m) => (
                <option key={m.metric} value={m.metric}>
                  {m.label}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span id="rule-application">Application</span>
            <select
              aria-labelledby="rule-application"
              name="application_id"
              required={metric === 'log_matches'}
              {...invalidProps('rule-app', fieldError('application_id'))}
            >
              <option value="">{metric === 'log_matches' ? 'Choose an application' : 'Every application'}</option>
              {(apps.data ?? []).map((a) => (
                <option key={a.id} value={a.id}>
                  {a.project_slug} / {a.name}
                </option>
              ))}
            </select>
          </label>
          <FieldError name="rule-app" message={fieldError('application_id')} />
          {metric === 'log_matches' && (
            <>
              <label>
                Text a log line holds (plain text, not a pattern language)
                <input name="pattern" required maxLength={200} {...invalidProps('rule-pattern', fieldError('pattern'))} />
              </label>
              <FieldError name="rule-pattern" message={fieldError('pattern')} />
              <label class="check">
                <input name="ignore_case" type="checkbox" /> In any case (upper or lower)
              </label>
            </>
          )}
          <label>
            {metric === 'log_matches' ? 'Fires above (matching lines in the window)' : 'Fires above'}
            <input
              name="threshold"
              type="number"
              step="any"
              min="0"
              required
              {...invalidProps('rule-threshold', fieldError('threshold'))}
            />
          </label>
          <FieldError name="rule-threshold" message={fieldError('threshold')} />
          <label>
            Over a window of (seconds, default 300)
            <input name="window_seconds" type="number" min="1" max="86400" {...invalidProps('rule-window', fieldError('window_seconds'))} />
          </label>
          <FieldError name="rule-window" message={fieldError('window_seconds')} />
          <label>
            For at least (seconds, default 0)
            <input name="for_seconds" type="number" min="0" max="86400" {...invalidProps('rule-for', fieldError('for_seconds'))} />
          </label>
          <FieldError name="rule-for" message={fieldError('for_seconds')} />
          <button type="submit">Add rule</button>
          {!shownElsewhere && <ErrorMessage message={refusal?.message} />}
        </form>
      </section>
    </>
  );
}

function RuleCard({ org, rule: r, onChanged }: { org: string; rule: Rule; onChanged: () => void }) {
  const params = { params: { path: { org_slug: org, rule: r.name } } };
  const [history, setHistory] = useState(false);
  const [silence, setSilence] = useState(SILENCES[0]!.seconds);
  const silenced = r.silenced_until !== null && Date.parse(r.silenced_until) > Date.now();
  return (
    <li data-rule={r.name} data-state={r.state}>
      <p>
        <strong>{r.name}</strong> <span class={`status ${STATE_CLASS[r.state]}`}>{r.state}</span>{' '}
        {silenced && <span class="status status-busy">silenced until {when(r.silenced_until)}</span>}
      </p>
      <p class="muted">
        {r.metric}
        {r.pattern !== null && (
          <>
            {' '}
            “<code data-pattern>{r.pattern}</code>”{r.ignore_case ? ' (any case)' : ''}
          </>
        )}{' '}
        above {r.threshold} over {r.window_seconds} s{r.for_seconds > 0 ? ` for ${r.for_seconds} s` : ''} ·{' '}
        {r.application ? `${r.application}${r.environment ? ` (${r.environment})` : ''}` : 'every application'} · last value{' '}
        {r.value ?? '—'} {r.evaluated ? `at ${when(r.evaluated)}` : '(not evaluated yet)'}
      </p>
      <div class="buttons">
        <button type="button" aria-expanded={history} onClick={() => setHistory(!history)}>
          History
        </button>
        {silenced ? (
          <ConfirmAction
            label="Unsilence"
            ariaLabel={`Unsilence ${r.name}`}
            title={`Lift the silence of ${r.name}`}
            changes={[{ label: 'Notifications', from: `silenced until ${when(r.silenced_until)}`, to: 'sent again' }]}
            run={() => ok(api.DELETE('/v1/organizations/{org_slug}/alert-rules/{rule}/silence', params))}
            done="Silence lifted."
            onDone={onChanged}
          />
        ) : (
          <>
            <label class="inline-label">
              <span class="sr-only">Silence {r.name} for</span>
              <select value={silence} onChange={(e) => setSilence(Number((e.currentTarget as HTMLSelectElement).value))}>
                {SILENCES.map((s) => (
                  <option key={s.seconds} value={s.seconds}>
                    {s.label}
                  </option>
                ))}
              </select>
            </label>
            <ConfirmAction
              label="Silence"
              ariaLabel={`Silence ${r.name}`}
              title={`Silence ${r.name}`}
              changes={[{ label: 'Notifications', from: 'sent', to: `none for ${SILENCES.find((s) => s.seconds === silence)!.label}` }]}
              note="Its state changes are still recorded in its history."
              run={() =>
                ok(api.PUT('/v1/organizations/{org_slug}/alert-rules/{rule}/silence', { ...params, body: { for_seconds: silence } }))
              }
              done="Silenced."
              onDone={onChanged}
            />
          </>
        )}
        <ConfirmAction
          label="Delete"
          ariaLabel={`Delete rule ${r.name}`}
          danger
          title={`Delete the rule ${r.name}`}
          changes={[{ label: 'Rule', from: `${r.metric} above ${r.threshold}`, to: 'deleted, with its history' }]}
          run={() => ok(api.DELETE('/v1/organizations/{org_slug}/alert-rules/{rule}', params))}
          done="Deleted."
          onDone={onChanged}
        />
      </div>
      {history && <History org={org} rule={r.name} />}
    </li>
  );
}

function History({ org, rule }: { org: string; rule: string }) {
  const history = useLoad(
    () => ok(api.GET('/v1/organizations/{org_slug}/alert-rules/{rule}/history', { params: { path: { org_slug: org, rule } } })),
    [org, rule],
  );
  return (
    <Loading state={history} what="history" empty="No state changes yet.">
      {(list) => (
        <div class="table-scroll">
          <table aria-label={`History of ${rule}`}>
            <thead>
              <tr>
                <th>When</th>
                <th>Change</th>
                <th>Value</th>
                <th>Notified</th>
              </tr>
            </thead>
            <tbody>
              {list.map((t) => (
                <tr key={t.at + t.to}>
                  <td>{when(t.at)}</td>
                  <td>
                    {t.from} → <strong>{t.to}</strong>
                  </td>
                  <td>{t.value ?? '—'}</td>
                  <td>{t.notified ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Loading>
  );
}
