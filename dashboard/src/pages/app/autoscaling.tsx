import { useRef, useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Schemas } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { FieldError, invalidProps, Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { EnvironmentOptions, protectionNote, useEnvironments } from './environments-list.js';
import type { SectionProps } from './types.js';

type Policy = Schemas['AutoscalePolicy'];

const targetText = (t: Policy['target']) => ('cpu_percent' in t ? `CPU ${t.cpu_percent}%` : `${t.requests_per_second} requests/s`);

const FIELDS = ['min', 'max', 'target', 'cooldown_seconds'] as const;
const NEW_POLICY = {
  process_type: '',
  environment: 'production',
  min: '1',
  max: '3',
  target_kind: 'cpu',
  target_value: '70',
  cooldown_seconds: '300',
};

/**
 * Autoscaling per process type and environment (min, max, a CPU or requests-per-second target),
 * and the autoscaler's decisions: each change it made with its reason and measurement.
 */
export function AutoscalingSection({ app, org, project }: SectionProps) {
  const path = { params: { path: { application_id: app.id } } };
  const policies = useLoad(() => ok(api.GET('/v1/applications/{application_id}/autoscaling', path)), [app.id]);
  const events = useLoad(() => ok(api.GET('/v1/applications/{application_id}/scale-events', path)), [app.id]);
  const environments = useEnvironments(org, project);
  const envOf = (id: string) => environments.data?.find((e) => e.id === id);
  const [fields, setFields] = useState<Partial<Record<(typeof FIELDS)[number], string>>>({});
  const form = useRef<HTMLFormElement>(null);
  const [draft, setDraft] = useState<Record<string, string>>(NEW_POLICY);
  const types = Object.keys(app.process_counts).sort();
  const processType = draft.process_type || types[0] || 'web';

  // Run from the confirmation: a refusal naming a field goes under it, and the dialog's result only points there.
  const save = async () => {
    const data = new FormData(form.current!);
    const value = Number(data.get('target_value'));
    try {
      await ok(
        api.PUT('/v1/applications/{application_id}/autoscaling/{process_type}', {
          params: { path: { application_id: app.id, process_type: processType }, query: { environment: String(data.get('environment')) } },
          body: {
            min: Number(data.get('min')),
            max: Number(data.get('max')),
            target: data.get('target_kind') === 'cpu' ? { cpu_percent: value } : { requests_per_second: value },
            cooldown_seconds: Number(data.get('cooldown_seconds')),
          },
        }),
      );
      setFields({});
      policies.reload();
    } catch (e) {
      const named = e instanceof ApiError ? FIELDS.filter((f) => e.fields.some((x) => x.field.includes(f)) || e.message.includes(f)) : [];
      setFields(Object.fromEntries(named.map((f) => [f, errorText(e)])));
      throw named.length > 0 ? new Error('Not saved: see the field above.') : e;
    }
  };
  const current = policies.data?.find((p) => p.process_type === processType && envOf(p.environment_id)?.slug === draft.environment);
  const wanted = `${draft.min}–${draft.max}, ${draft.target_kind === 'cpu' ? `CPU ${draft.target_value}%` : `${draft.target_value} requests/s`}`;
  const number = (name: (typeof FIELDS)[number] | 'target_value', label: string, value: string, min: number, max: number) => (
    <>
      <label>
        {label}
        <input
          name={name}
          type="number"
          min={min}
          max={max}
          step="any"
          required
          defaultValue={value}
          {...invalidProps(name, fields[name as (typeof FIELDS)[number]])}
        />
      </label>
      <FieldError name={name} message={fields[name as (typeof FIELDS)[number]]} />
    </>
  );
  return (
    <>
      <section class="panel" aria-labelledby="autoscaling-h">
        <h2 id="autoscaling-h" data-page-title>
          Autoscaling
        </h2>
        <Loading state={policies} what="autoscaling policies">
          {(list) =>
            list.length === 0 ? (
              <p class="muted empty">No process type autoscales: its count stays as set on the overview.</p>
            ) : (
              <div class="table-scroll">
                <table aria-label="Autoscaling policies" class="app-list">
                  <thead>
                    <tr>
                      <th>Process</th>
                      <th>Instances and target</th>
                      <th class="wide-only">Last decision</th>
                      <th>Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((p) => {
                      const env = envOf(p.environment_id);
                      return (
                        <tr key={p.id} data-policy={p.process_type}>
                          <td>
                            {p.process_type} <span class="env">{env?.slug ?? '…'}</span>
                          </td>
                          <td>
                            {p.min}–{p.max}, {targetText(p.target)}
                          </td>
                          <td class="wide-only">
                            evaluated {when(p.last_evaluated_at)}, scaled {when(p.last_scaled_at)}
                          </td>
                          <td class="actions">
                            <ConfirmAction
                              class="compact"
                              label="Stop"
                              ariaLabel={`Stop autoscaling ${p.process_type}`}
                              title={`Stop autoscaling ${p.process_type}`}
                              environment={env?.slug}
                              changes={[
                                { label: 'Autoscaling', from: `${p.min}–${p.max}, ${targetText(p.target)}`, to: 'off (count stays)' },
                              ]}
                              note={protectionNote(env)}
                              run={() =>
                                ok(
                                  api.DELETE('/v1/applications/{application_id}/autoscaling/{process_type}', {
                                    params: {
                                      path: { application_id: app.id, process_type: p.process_type },
                                      query: { environment: env?.slug ?? 'production' },
                                    },
                                  }),
                                )
                              }
                              done="Stopped."
                              onDone={policies.reload}
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
        <form
          ref={form}
          aria-label="Set an autoscaling policy"
          onSubmit={(e) => e.preventDefault()}
          onInput={(e) => setDraft(Object.fromEntries([...new FormData(e.currentTarget)].map(([k, v]) => [k, String(v)])))}
        >
          <h3>Set a policy</h3>
          <label>
            Process type
            <select name="process_type">
              {(types.length > 0 ? types : ['web']).map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </label>
          <label>
            Environment
            <select name="environment" defaultValue="production">
              <EnvironmentOptions environments={environments.data} />
            </select>
          </label>
          {number('min', 'Minimum instances', '1', 1, 100)}
          {number('max', 'Maximum instances', '3', 1, 100)}
          <label>
            Target
            <select name="target_kind">
              <option value="cpu">CPU % per instance</option>
              <option value="rps">Requests per second per instance</option>
            </select>
          </label>
          {number('target_value', 'Target value', '70', 0.001, 1000000)}
          {number('cooldown_seconds', 'Cooldown (seconds)', '300', 0, 86400)}
          <ConfirmAction
            label="Save policy"
            title={`Autoscale ${processType}`}
            environment={draft.environment}
            changes={[
              {
                label: `${processType} instances`,
                from: current ? `${current.min}–${current.max}, ${targetText(current.target)}` : 'a fixed count',
                to: wanted,
              },
            ]}
            note={protectionNote(environments.data?.find((e) => e.slug === draft.environment))}
            run={save}
            done="Saved."
          />
        </form>
      </section>

      <section class="panel" aria-labelledby="scale-events-h">
        <h2 id="scale-events-h">Decisions</h2>
        <Loading state={events} what="scale events">
          {(page) =>
            page.items.length === 0 ? (
              <p class="muted empty">The autoscaler has changed nothing yet.</p>
            ) : (
              <ul class="plain">
                {page.items.map((e) => (
                  <li key={e.id}>
                    <strong>
                      {e.process_type} {e.from} → {e.to}
                    </strong>{' '}
                    <span class="env">{envOf(e.environment_id)?.slug ?? '…'}</span> {e.reason}{' '}
                    <span class="muted">
                      {Object.entries(e.metric)
                        .map(([k, v]) => `${k} ${v ?? '—'}`)
                        .join(', ')}{' '}
                      · {when(e.created_at)}
                    </span>
                  </li>
                ))}
              </ul>
            )
          }
        </Loading>
      </section>
    </>
  );
}
