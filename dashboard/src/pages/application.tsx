import { useEffect, useState } from 'preact/hooks';
import { api, errorText, ok, type Paths } from '../api.js';
import { LogView } from '../components/log-view.js';
import { ErrorMessage, Loading, Status, when } from '../components/ui.js';
import { useEventStream, useLoad } from '../hooks.js';
import { applicationConfig, ConfigurationPanel } from './configuration.js';
import { MetricsPanel } from './metrics.js';
import { SettingsPanel } from './settings.js';

const EVENT_KINDS = [
  'image.updated',
  'release.updated',
  'deployment.updated',
  'scale.updated',
  'instance.crashed',
  'instance.restarted',
  'run.updated',
];
const POD_CLASSES = [
  'm1.small',
  'm1.medium',
  'm1.large',
  'c1.small',
  'c1.medium',
  'c1.large',
  'r1.small',
  'r1.medium',
  'r1.large',
  'r1.xlarge',
  'r1.2xlarge',
] as const;
type PodClass = (typeof POD_CLASSES)[number];

interface AppEvent {
  kind: string;
  id: string;
  status?: string;
  at: string;
}

type Selected = { kind: 'deployment' | 'image'; id: string; label: string } | null;

/** An application: what serves, its processes and scale, its pipeline with live logs, configuration, metrics. */
export function ApplicationPage({ org, project, app, tab = 'overview' }: { org: string; project: string; app: string; tab?: string }) {
  const detail = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{org_slug}/{project_slug}/{app_slug}', {
          params: { path: { org_slug: org, project_slug: project, app_slug: app } },
        }),
      ),
    [org, project, app],
  );
  const base = `/apps/${org}/${project}/${app}`;
  return (
    <Loading state={detail}>
      {(a) => (
        <>
          <p class="crumbs">
            <a href="/">Organizations</a> / <a href={`/orgs/${org}`}>{org}</a> / <a href={`/orgs/${org}/${project}`}>{project}</a> /
          </p>
          <h1>{a.name}</h1>
          <nav class="tabs" aria-label="Application">
            {[
              ['overview', 'Overview'],
              ['configuration', 'Configuration'],
              ['metrics', 'Metrics'],
              ['settings', 'Settings'],
            ].map(([slug, label]) => (
              <a key={slug} href={slug === 'overview' ? base : `${base}/${slug}`} aria-current={tab === slug ? 'page' : undefined}>
                {label}
              </a>
            ))}
          </nav>
          {tab === 'configuration' ? (
            <ConfigurationPanel endpoints={applicationConfig(a.id)} />
          ) : tab === 'settings' ? (
            <SettingsPanel app={a} onSaved={detail.reload} />
          ) : tab === 'metrics' ? (
            <MetricsPanel applicationId={a.id} />
          ) : (
            <Overview app={a} reloadApp={detail.reload} />
          )}
        </>
      )}
    </Loading>
  );
}

type Application = Paths['/v1/applications/{org_slug}/{project_slug}/{app_slug}']['get']['responses'][200]['content']['application/json'];

function Overview({ app, reloadApp }: { app: Application; reloadApp: () => void }) {
  const path = { params: { path: { application_id: app.id } } };
  const deployments = useLoad(() => ok(api.GET('/v1/applications/{application_id}/deployments', path)), [app.id]);
  const images = useLoad(() => ok(api.GET('/v1/images/{application_id}', path)), [app.id]);
  const releases = useLoad(() => ok(api.GET('/v1/releases/{application_id}', path)), [app.id]);
  const [events, setEvents] = useState<AppEvent[]>([]);
  const [selected, setSelected] = useState<Selected>(null);
  const [release, setRelease] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  // Any change made anywhere (CLI, API, a push) arrives here: refresh what it touches.
  const onEvent = (data: unknown) => {
    const event = data as AppEvent;
    setEvents((all) => [event, ...all].slice(0, 20));
    if (event.kind.startsWith('deployment')) deployments.reload();
    if (event.kind.startsWith('image')) images.reload();
    if (event.kind.startsWith('release')) releases.reload();
    reloadApp();
    // Follow a new deployment's log as soon as it exists, unless the user is reading another one.
    if (event.kind === 'deployment.updated' && event.status === 'deploying')
      setSelected((s) => s ?? { kind: 'deployment', id: event.id, label: 'Deployment' });
  };
  const live = useEventStream(`/v1/applications/${app.id}/events`, Object.fromEntries(EVENT_KINDS.map((k) => [k, onEvent])));

  const act = async (work: () => Promise<unknown>, done?: string) => {
    try {
      await work();
      setError(null);
      setNotice(done ?? null);
    } catch (e) {
      setError(errorText(e));
      setNotice(null);
    }
  };

  // What serves in each environment: its newest complete deployment (production first).
  const serving = [...(deployments.data?.items ?? [])]
    .filter((d) => d.status === 'complete')
    .filter((d, n, all) => all.findIndex((o) => o.environment === d.environment) === n)
    .sort((x, y) => Number(y.environment === 'production') - Number(x.environment === 'production'));

  return (
    <>
      <p class="muted live" data-live={live}>
        {live ? '● Live updates on' : 'Connecting to live updates…'}
      </p>
      <ErrorMessage message={error} />
      {notice && <p role="status">{notice}</p>}
      <section aria-labelledby="serving-h" class="panel">
        <h2 id="serving-h">Serving</h2>
        {serving.length === 0 ? (
          <p class="muted empty">Nothing is serving yet: deploy to start.</p>
        ) : (
          serving.map((d) => <Serving key={d.id} deployment={d} refresh={events.length} />)
        )}
        <Health applicationId={app.id} refresh={events.length} />
        <p class="muted">Repository: {app.github_repository ?? 'none set (see Settings)'}</p>
        <div class="buttons">
          <button
            type="button"
            onClick={() => act(() => ok(api.POST('/v1/applications/{application_id}/deploy', path)), 'Deploy started.')}
          >
            Deploy
          </button>
          <button
            type="button"
            onClick={() =>
              act(() => ok(api.POST('/v1/applications/{application_id}/rollback', { ...path, body: {} })), 'Rollback started.')
            }
          >
            Roll back
          </button>
        </div>
      </section>

      <Processes app={app} onScaled={reloadApp} onError={setError} />

      <section aria-labelledby="deployments-h" class="panel">
        <h2 id="deployments-h">Deployments</h2>
        <Loading state={deployments}>
          {(page) =>
            page.items.length === 0 ? (
              <p class="muted empty">No deployments yet.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th>Release</th>
                    <th>Status</th>
                    <th>Step</th>
                    <th>Started</th>
                    <th>
                      <span class="sr-only">Log</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.slice(0, 10).flatMap((d) => [
                    <tr key={d.id} data-deployment={d.id}>
                      <td>
                        v{d.release.version} {d.is_rollback && <span class="muted">(rollback)</span>}
                      </td>
                      <td>
                        <Status error={d.error} done={d.complete} label={d.queue_reason ? 'queued' : d.status} />
                        {d.queue_reason && <p class="muted queue-reason">{d.queue_reason}</p>}
                      </td>
                      <td>
                        {d.deploy_step
                          ? `${Math.min(d.deploy_step.current + 1, d.deploy_step.steps.length)}/${d.deploy_step.steps.length} ${d.deploy_step.steps[d.deploy_step.current] ?? ''}`
                          : '—'}
                      </td>
                      <td>{when(d.created)}</td>
                      <td>
                        <button
                          type="button"
                          onClick={() => setSelected({ kind: 'deployment', id: d.id, label: `Deployment of v${d.release.version}` })}
                        >
                          Log
                        </button>
                      </td>
                    </tr>,
                    ...(d.error && (d.failure || d.error_detail)
                      ? [
                          <tr key={`${d.id}-failure`} class="failure-row">
                            <td colSpan={5}>
                              <FailureDetail deployment={d} />
                            </td>
                          </tr>,
                        ]
                      : []),
                  ])}
                </tbody>
              </table>
            )
          }
        </Loading>
      </section>

      {selected && (
        <LogView
          key={selected.id}
          title={`${selected.label} log`}
          url={selected.kind === 'deployment' ? `/v1/deployments/${selected.id}/log/stream` : `/v1/images/${selected.id}/log/stream`}
        />
      )}

      <div class="columns">
        <section aria-labelledby="builds-h" class="panel">
          <h2 id="builds-h">Builds</h2>
          <Loading state={images}>
            {(page) =>
              page.items.length === 0 ? (
                <p class="muted empty">No builds yet.</p>
              ) : (
                <ul class="plain">
                  {page.items.slice(0, 8).map((i) => (
                    <li key={i.id}>
                      Image v{i.version}{' '}
                      <Status error={i.error} done={i.built} label={i.error ? 'failed' : i.built ? 'built' : 'building'} />{' '}
                      <button
                        type="button"
                        class="link"
                        onClick={() => setSelected({ kind: 'image', id: i.id, label: `Build of image v${i.version}` })}
                      >
                        log
                      </button>
                    </li>
                  ))}
                </ul>
              )
            }
          </Loading>
        </section>
        <section aria-labelledby="releases-h" class="panel">
          <h2 id="releases-h">Releases</h2>
          <Loading state={releases}>
            {(page) =>
              page.items.length === 0 ? (
                <p class="muted empty">No releases yet.</p>
              ) : (
                <ul class="plain">
                  {page.items.slice(0, 8).map((r) => (
                    <li key={r.id}>
                      <button
                        type="button"
                        class="link"
                        aria-expanded={release === r.id}
                        onClick={() => setRelease(release === r.id ? null : r.id)}
                      >
                        v{r.version}
                      </button>{' '}
                      <span class="muted">{r.environment}</span>{' '}
                      <Status error={r.error} done={r.built} label={r.error ? 'failed' : r.built ? 'ready' : 'preparing'} />{' '}
                      <button
                        type="button"
                        class="link"
                        onClick={() =>
                          act(
                            () => ok(api.POST('/v1/releases/{release_id}/deploy', { params: { path: { release_id: r.id } } })),
                            `Deploying release v${r.version}.`,
                          )
                        }
                      >
                        deploy this release
                      </button>
                    </li>
                  ))}
                </ul>
              )
            }
          </Loading>
          {release && <ReleaseDetail id={release} />}
        </section>
      </div>

      <section aria-labelledby="events-h" class="panel">
        <h2 id="events-h">Recent events</h2>
        {events.length === 0 ? (
          <p class="muted empty">No events since this page opened.</p>
        ) : (
          <ul class="plain events">
            {events.map((e, n) => (
              <li key={n}>
                <code>{e.kind}</code> {e.status ?? ''} <span class="muted">{when(e.at)}</span>
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}

function Processes({ app, onScaled, onError }: { app: Application; onScaled: () => void; onError: (message: string | null) => void }) {
  const types = Object.keys({ ...app.process_counts, ...app.process_pod_classes }).sort();
  const scale = async (event: Event, known?: string) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const type = known ?? String(form.get('type'));
    try {
      await ok(
        api.POST('/v1/applications/{application_id}/scale', {
          params: { path: { application_id: app.id } },
          body: {
            process_counts: { [type]: Number(form.get('count')) },
            process_pod_classes: { [type]: String(form.get('pod_class')) as PodClass },
          },
        }),
      );
      onError(null);
      onScaled();
    } catch (e) {
      onError(errorText(e));
    }
  };
  return (
    <section aria-labelledby="processes-h" class="panel">
      <h2 id="processes-h">Processes</h2>
      {types.length === 0 ? (
        <p class="muted empty">No process types yet: they come from the Procfile of the first release.</p>
      ) : (
        <ul class="plain">
          {types.map((type) => (
            <li key={type}>
              <form class="inline scale" aria-label={`Scale ${type}`} onSubmit={(e) => scale(e, type)}>
                <strong>{type}</strong>
                <span data-testid={`count-${type}`}>{app.process_counts[type] ?? 0} running</span>
                <label>
                  Instances
                  <input type="number" name="count" min={0} max={100} value={app.process_counts[type] ?? 0} required />
                </label>
                <label>
                  Pod class
                  <select name="pod_class" value={app.process_pod_classes[type] ?? 'm1.small'}>
                    {POD_CLASSES.map((c) => (
                      <option key={c}>{c}</option>
                    ))}
                  </select>
                </label>
                <button type="submit">Scale</button>
              </form>
            </li>
          ))}
        </ul>
      )}
      <form class="inline scale" aria-label="Scale another process type" onSubmit={(e) => scale(e)}>
        <label>
          Process type
          <input name="type" required pattern="[a-z][a-z0-9_-]{0,62}" placeholder="web" />
        </label>
        <label>
          Instances
          <input type="number" name="count" min={0} max={100} value={1} required />
        </label>
        <input type="hidden" name="pod_class" value="m1.small" />
        <button type="submit">Scale</button>
      </form>
    </section>
  );
}

type Deployment =
  Paths['/v1/applications/{application_id}/deployments']['get']['responses'][200]['content']['application/json']['items'][number];

/** Why a deployment failed: the structured `failure` (exit, health check, last lines, hint), else its error text. */
function FailureDetail({ deployment: d }: { deployment: Deployment }) {
  const f = d.failure;
  if (!f) return <p class="failure">{d.error_detail}</p>;
  const what =
    f.reason === 'health_check_timeout'
      ? `${f.instance} never answered its health check`
      : f.reason === 'crashed_in_stability_window'
        ? `${f.instance} crashed ${f.seconds_after_healthy ?? '?'} s after it first answered`
        : `${f.instance} crashed during start`;
  return (
    <div class="failure" aria-label={`Why deployment of v${d.release.version} failed`}>
      <p>
        <strong>{what}</strong>
        {f.exit && <> ({f.exit.description})</>}
      </p>
      <dl class="facts">
        {f.health_check && (
          <>
            <dt>Health check</dt>
            <dd>
              {f.health_check.path} on port {f.health_check.port}: {f.health_check.result}
            </dd>
          </>
        )}
        {f.listening_ports && f.listening_ports.length > 0 && (
          <>
            <dt>Listening on</dt>
            <dd>{f.listening_ports.join(', ')}</dd>
          </>
        )}
        {f.hint && (
          <>
            <dt>Hint</dt>
            <dd>{f.hint}</dd>
          </>
        )}
      </dl>
      {f.output.length > 0 && (
        <>
          <p class="muted">Its last lines of output:</p>
          <pre class="failure-output">{f.output.join('\n')}</pre>
        </>
      )}
    </div>
  );
}

function Serving({ deployment: d, refresh }: { deployment: Deployment; refresh: number }) {
  const url = typeof d.deploy_metadata?.url === 'string' ? d.deploy_metadata.url : null;
  return (
    <div class="serving" data-environment={d.environment}>
      <h3>{d.environment}</h3>
      <dl class="facts">
        <dt>Release</dt>
        <dd data-testid={`serving-release-${d.environment}`}>v{d.release.version}</dd>
        <dt>Commit</dt>
        <dd>
          <code>{d.release.commit_sha?.slice(0, 12) ?? '—'}</code>
        </dd>
        <dt>URL</dt>
        <dd>{url ? <a href={url}>{url}</a> : '—'}</dd>
        <dt>Processes</dt>
        <dd>{processSummary(d.deploy_metadata?.process_counts)}</dd>
        <dt>Deployed</dt>
        <dd>
          {when(d.finished)} {d.is_rollback && <span class="status status-busy">rollback</span>}
        </dd>
      </dl>
      <Instances applicationId={d.application_id} environment={d.environment} refresh={refresh} />
    </div>
  );
}

function processSummary(counts: unknown): string {
  if (!counts || typeof counts !== 'object') return '—';
  const entries = Object.entries(counts as Record<string, number>);
  return entries.length === 0 ? '—' : entries.map(([type, n]) => `${type}=${n}`).join(', ');
}

const STATE_CLASS: Record<string, string> = {
  healthy: 'status-ok',
  running: 'status-ok',
  starting: 'status-busy',
  crashed: 'status-error',
};

/** How often the instance table is read again between events (an instance becoming healthy sends none). */
const INSTANCES_POLL_MS = 3000;

/**
 * What runs in one environment right now: each instance's state, restarts and why it last
 * exited, from the API's instance list, read again on every event of the application and
 * every few seconds while shown.
 */
function Instances({ applicationId, environment, refresh }: { applicationId: string; environment: string; refresh: number }) {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => document.visibilityState === 'visible' && setTick((t) => t + 1), INSTANCES_POLL_MS);
    return () => clearInterval(timer);
  }, []);
  const instances = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{application_id}/instances', {
          params: { path: { application_id: applicationId }, query: { environment } },
        }),
      ),
    [applicationId, environment, refresh, tick],
  );
  const rows = instances.data ?? [];
  if (rows.length === 0) return null;
  return (
    <table aria-label={`Instances in ${environment}`} data-testid={`instances-${environment}`}>
      <thead>
        <tr>
          <th>Instance</th>
          <th>State</th>
          <th>Restarts</th>
          <th>Last exit</th>
          <th>Release</th>
          <th>Since</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((i) => (
          <tr key={i.id} data-instance={i.name}>
            <td>{i.name}</td>
            <td>
              <span class={`status ${STATE_CLASS[i.state] ?? ''}`}>{i.state}</span>
            </td>
            <td>{i.restarts}</td>
            <td>{i.last_exit ?? '—'}</td>
            <td>{i.release_version === null ? '—' : `v${i.release_version}`}</td>
            <td>{when(i.started_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The latest observability sample: running instances, CPU, memory and restarts (refreshed with every event). */
function Health({ applicationId, refresh }: { applicationId: string; refresh: number }) {
  const sample = useLoad(
    async () =>
      (
        await ok(
          api.GET('/v1/applications/{application_id}/observability', {
            params: { path: { application_id: applicationId }, query: { range: '1h' } },
          }),
        )
      ).history.at(-1) ?? null,
    [applicationId, refresh],
  );
  const s = sample.data;
  if (!s) return null;
  return (
    <p class="muted" data-testid="health">
      Last sample {when(s.timestamp)}: {s.pod_count} instances, {s.restart_count} restarts, CPU {s.cpu_usage_m} m, memory{' '}
      {(s.memory_usage_bytes / 2 ** 20).toFixed(0)} MiB
    </p>
  );
}

function Changes({ title, changes }: { title: string; changes: { added: string[]; changed: string[]; removed: string[] } | null }) {
  if (!changes) return null;
  const parts = (['added', 'changed', 'removed'] as const).filter((k) => changes[k].length > 0);
  return (
    <p>
      <strong>{title}:</strong> {parts.length === 0 ? 'no changes' : parts.map((k) => `${k} ${changes[k].join(', ')}`).join('; ')}
    </p>
  );
}

/** A release: its image, commit, processes, and what changed in its image and configuration since the previous one. */
function ReleaseDetail({ id }: { id: string }) {
  const detail = useLoad(() => ok(api.GET('/v1/releases/{release_id}/detail', { params: { path: { release_id: id } } })), [id]);
  return (
    <div class="release-detail" aria-live="polite">
      <Loading state={detail}>
        {(r) => (
          <>
            <h3>Release v{r.version}</h3>
            <p>
              Image v{r.image?.version ?? '—'} <code>{r.commit_sha?.slice(0, 12) ?? '—'}</code> · {when(r.created)}
            </p>
            <p>Processes: {Object.keys(r.processes ?? {}).join(', ') || '—'}</p>
            <Changes title="Image changes" changes={r.image_changes} />
            <Changes title="Configuration changes" changes={r.configuration_changes} />
            <p class="muted">
              Configuration: {(r.configuration ?? []).map((c) => (c.secret ? `${c.name} (secret)` : c.name)).join(', ') || 'none'}
            </p>
          </>
        )}
      </Loading>
    </div>
  );
}
