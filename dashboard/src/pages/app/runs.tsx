import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Schemas } from '../../api.js';
import { LogView } from '../../components/log-view.js';
import { ErrorMessage, FieldError, invalidProps, Loading, Status, duration, when } from '../../components/ui.js';
import { useEventStream, useLoad } from '../../hooks.js';
import { EnvironmentOptions, protectionNote, useEnvironments } from './environments-list.js';
import { CopyLine } from './copy-line.js';
import type { SectionProps } from './types.js';

type Run = Schemas['OneOffRun'];

const FINISHED = new Set<Run['status']>(['succeeded', 'failed', 'timed_out']);

/** "exit 0", "timed out", "running": a run's outcome in a few words. */
export function runOutcome(r: Run): string {
  if (r.status === 'timed_out') return 'timed out';
  if (!FINISHED.has(r.status)) return r.status;
  return r.exit_code === null ? r.status : `${r.status}, exit ${r.exit_code}`;
}

/**
 * One-off runs: a command in the serving release (queued, non-interactive), the runs so far with
 * their exit status, and the chosen run's output followed live. An interactive shell is the CLI's.
 */
export function RunsSection({ app, org, project }: SectionProps) {
  const path = { params: { path: { application_id: app.id } } };
  const runs = useLoad(() => ok(api.GET('/v1/applications/{application_id}/runs', path)), [app.id]);
  const environments = useEnvironments(org, project);
  const [selected, setSelected] = useState<Run | null>(null);
  const [commandError, setCommandError] = useState<string>();
  const [error, setError] = useState<string | null>(null);
  const [environment, setEnvironment] = useState('production');
  // A run's status changes arrive on the application's event stream: the list follows them.
  useEventStream(`/v1/applications/${app.id}/events`, { 'run.updated': () => runs.reload() });

  const start = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      const run = await ok(
        api.POST('/v1/applications/{application_id}/runs', {
          ...path,
          body: { command: String(data.get('command')), environment, timeout_seconds: Number(data.get('timeout_seconds')) || 600 },
        }),
      );
      setCommandError(undefined);
      setError(null);
      setSelected(run);
      runs.reload();
    } catch (e) {
      const named = e instanceof ApiError && e.fields.some((f) => f.field.includes('command'));
      setCommandError(named ? errorText(e) : undefined);
      setError(named ? null : errorText(e));
    }
  };
  const chosenEnvironment = environments.data?.find((e) => e.slug === environment);
  const appRef = `${org}/${project}/${app.slug}`;
  return (
    <>
      <section class="panel" aria-labelledby="runs-h">
        <h2 id="runs-h" data-page-title>
          One-off runs
        </h2>
        <p class="muted">
          A command runs once in the serving release, with its image and configuration; its output and exit status stay here.
        </p>
        <form aria-label="Start a run" onSubmit={start}>
          <label>
            Command
            <input name="command" required autocomplete="off" placeholder="npm run migrate" {...invalidProps('command', commandError)} />
          </label>
          <FieldError name="command" message={commandError} />
          <label>
            Environment
            <select value={environment} onChange={(e) => setEnvironment((e.currentTarget as HTMLSelectElement).value)}>
              <EnvironmentOptions environments={environments.data} />
            </select>
          </label>
          {protectionNote(chosenEnvironment) && <p class="muted">{protectionNote(chosenEnvironment)}</p>}
          <label>
            Timeout (seconds)
            <input name="timeout_seconds" type="number" min={1} max={86400} defaultValue="600" />
          </label>
          <button type="submit" class="primary">
            Run
          </button>
          <ErrorMessage message={error} />
        </form>
        <p class="muted">An interactive shell inside a running instance is not offered in the browser; from a terminal:</p>
        <CopyLine text={`slipway exec --app ${appRef}`} label="The exec command" />
        <CopyLine text={`slipway run --app ${appRef} -- COMMAND`} label="The attached run command" />
      </section>

      <section class="panel" aria-labelledby="run-history-h">
        <h2 id="run-history-h">Runs</h2>
        <Loading state={runs} what="runs">
          {(page) =>
            page.items.length === 0 ? (
              <p class="muted empty">No runs yet.</p>
            ) : (
              <RunTable runs={page.items} label="Runs" onLog={setSelected} />
            )
          }
        </Loading>
      </section>
      {selected && <LogView key={selected.id} title={`Output of ${selected.command}`} url={`/v1/runs/${selected.id}/log/stream`} />}
    </>
  );
}

/** Runs with their command, outcome (exit status) and duration; each row opens its output. */
export function RunTable({ runs, label, onLog }: { runs: Run[]; label: string; onLog: (r: Run) => void }) {
  return (
    <div class="table-scroll">
      <table aria-label={label} class="app-list">
        <thead>
          <tr>
            <th>Command</th>
            <th>Outcome</th>
            <th class="wide-only">Started</th>
            <th class="wide-only">Took</th>
            <th>
              <span class="sr-only">Output</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} data-run={r.id}>
              <td>
                <code>{r.command}</code>
                {r.cron_entry_id && <span class="muted"> (scheduled)</span>}
              </td>
              <td data-testid="run-outcome">
                <Status error={r.status === 'failed' || r.status === 'timed_out'} done={r.status === 'succeeded'} label={runOutcome(r)} />
                {r.error_detail && <span class="muted"> {r.error_detail}</span>}
              </td>
              <td class="wide-only">{when(r.started_at ?? r.created_at)}</td>
              <td class="wide-only">{duration(r.started_at, r.finished_at)}</td>
              <td>
                <button type="button" class="link" aria-label={`Output of the run of ${r.command}`} onClick={() => onLog(r)}>
                  Output
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
