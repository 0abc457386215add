import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Schemas } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { LogView } from '../../components/log-view.js';
import { ErrorMessage, FieldError, invalidProps, Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { EnvironmentOptions, useEnvironments } from './environments-list.js';
import { RunTable } from './runs.js';
import type { SectionProps } from './types.js';

type Entry = Schemas['CronEntry'];
type Run = Schemas['OneOffRun'];

const FIELDS = ['name', 'schedule', 'command'] as const;

/**
 * Scheduled jobs: each entry's schedule (UTC), command, next run and last runs; create or edit
 * (the same form: PUT by name), and remove behind a confirmation. The API has no paused state:
 * removing is how an entry stops (a slipway.json entry comes back with the next deployment).
 */
export function CronSection({ app, org, project }: SectionProps) {
  const entries = useLoad(
    () => ok(api.GET('/v1/applications/{application_id}/cron', { params: { path: { application_id: app.id } } })),
    [app.id],
  );
  const environments = useEnvironments(org, project);
  const envSlug = (e: Entry) => environments.data?.find((x) => x.id === e.environment_id)?.slug ?? 'production';
  const [editing, setEditing] = useState<Entry | null>(null);
  const [fields, setFields] = useState<Partial<Record<(typeof FIELDS)[number], string>>>({});
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [runsOf, setRunsOf] = useState<Entry | null>(null);

  const save = async (event: Event) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const name = String(data.get('name')).trim();
    try {
      await ok(
        api.PUT('/v1/applications/{application_id}/cron/{name}', {
          params: { path: { application_id: app.id, name }, query: { environment: String(data.get('environment')) } },
          body: { schedule: String(data.get('schedule')).trim(), command: String(data.get('command')) },
        }),
      );
      setFields({});
      setError(null);
      setSaved(`Saved ${name}.`);
      setEditing(null);
      entries.reload();
    } catch (e) {
      setSaved(null);
      const named = e instanceof ApiError ? FIELDS.filter((f) => e.fields.some((x) => x.field.includes(f)) || e.message.includes(f)) : [];
      setFields(Object.fromEntries(named.map((f) => [f, errorText(e)])));
      setError(named.length > 0 ? null : errorText(e));
    }
  };
  return (
    <>
      <section class="panel" aria-labelledby="cron-h">
        <h2 id="cron-h" data-page-title>
          Cron jobs
        </h2>
        <Loading state={entries} what="cron jobs">
          {(list) =>
            list.length === 0 ? (
              <p class="muted empty">No cron jobs: add one below, or declare them in slipway.json.</p>
            ) : (
              <div class="table-scroll">
                <table aria-label="Cron jobs" class="app-list">
                  <thead>
                    <tr>
                      <th>Job and schedule (UTC)</th>
                      <th class="wide-only">Command</th>
                      <th>Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((e) => (
                      <tr key={e.id} data-cron={e.name}>
                        <td>
                          {e.name} <span class="env">{envSlug(e)}</span>
                          {e.source === 'manifest' && <span class="muted"> (slipway.json)</span>}
                          <br />
                          <code>{e.schedule}</code>
                          <span class="muted"> next {when(e.next_run_at)}</span>
                        </td>
                        <td class="wide-only">
                          <code>{e.command}</code>
                        </td>
                        <td class="actions">
                          <button type="button" class="link" aria-label={`Last runs of ${e.name}`} onClick={() => setRunsOf(e)}>
                            Runs
                          </button>{' '}
                          <button type="button" class="link" aria-label={`Edit ${e.name}`} onClick={() => setEditing(e)}>
                            Edit
                          </button>{' '}
                          <ConfirmAction
                            class="compact"
                            label="Remove"
                            ariaLabel={`Remove ${e.name}`}
                            danger
                            title={`Remove the cron job ${e.name}`}
                            environment={envSlug(e)}
                            changes={[{ label: 'Schedule', from: e.schedule, to: 'no more runs' }]}
                            note={
                              e.source === 'manifest'
                                ? 'It comes from slipway.json: the next deployment brings it back.'
                                : 'Its past runs stay.'
                            }
                            run={() =>
                              ok(
                                api.DELETE('/v1/applications/{application_id}/cron/{name}', {
                                  params: { path: { application_id: app.id, name: e.name }, query: { environment: envSlug(e) } },
                                }),
                              )
                            }
                            done="Removed."
                            onDone={entries.reload}
                          />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Loading>
      </section>

      {runsOf && <CronRuns app={app.id} entry={runsOf} environment={envSlug(runsOf)} />}

      <section class="panel" aria-labelledby="cron-form-h">
        <h2 id="cron-form-h">{editing ? `Edit ${editing.name}` : 'Add a cron job'}</h2>
        {/* A new key per entry: the uncontrolled fields take the edited entry's values, and keep the user's on a refusal. */}
        <form key={editing?.id ?? 'new'} aria-label={editing ? `Edit ${editing.name}` : 'Add a cron job'} onSubmit={save}>
          <label>
            Name
            <input
              name="name"
              required
              pattern="[a-z0-9][a-z0-9_\-]{0,62}"
              defaultValue={editing?.name ?? ''}
              readOnly={editing !== null}
              autocomplete="off"
              {...invalidProps('name', fields.name)}
            />
          </label>
          <FieldError name="name" message={fields.name} />
          <label>
            Schedule (cron, UTC)
            <input
              name="schedule"
              required
              placeholder="0 3 * * *"
              defaultValue={editing?.schedule ?? ''}
              autocomplete="off"
              {...invalidProps('schedule', fields.schedule)}
            />
          </label>
          <FieldError name="schedule" message={fields.schedule} />
          <label>
            Command
            <input
              name="command"
              required
              defaultValue={editing?.command ?? ''}
              autocomplete="off"
              {...invalidProps('command', fields.command)}
            />
          </label>
          <FieldError name="command" message={fields.command} />
          <label>
            Environment
            <select name="environment" defaultValue={editing ? envSlug(editing) : 'production'} disabled={editing !== null}>
              <EnvironmentOptions environments={environments.data} />
            </select>
          </label>
          {editing && <input type="hidden" name="environment" value={envSlug(editing)} />}
          <div class="buttons">
            <button type="submit" class="primary">
              {editing ? 'Save cron job' : 'Add cron job'}
            </button>
            {editing && (
              <button type="button" onClick={() => setEditing(null)}>
                Cancel editing
              </button>
            )}
          </div>
          <ErrorMessage message={error} />
          {saved && <p role="status">{saved}</p>}
        </form>
      </section>
    </>
  );
}

/** A cron job's last runs (each one's output on demand). */
function CronRuns({ app, entry, environment }: { app: string; entry: Entry; environment: string }) {
  const runs = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{application_id}/cron/{name}/runs', {
          params: { path: { application_id: app, name: entry.name }, query: { environment, per_page: 10 } },
        }),
      ),
    [app, entry.name, environment],
  );
  const [selected, setSelected] = useState<Run | null>(null);
  return (
    <section class="panel" aria-labelledby="cron-runs-h">
      <h2 id="cron-runs-h">Last runs of {entry.name}</h2>
      <Loading state={runs} what="runs">
        {(page) =>
          page.items.length === 0 ? (
            <p class="muted empty">It has not run yet{entry.next_run_at ? `: next at ${when(entry.next_run_at)}` : ''}.</p>
          ) : (
            <RunTable runs={page.items} label={`Runs of ${entry.name}`} onLog={setSelected} />
          )
        }
      </Loading>
      {selected && <LogView key={selected.id} title={`Output of ${selected.command}`} url={`/v1/runs/${selected.id}/log/stream`} />}
    </section>
  );
}
