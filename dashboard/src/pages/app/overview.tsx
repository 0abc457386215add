import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { Icon } from '../../components/icons.js';
import { LogView } from '../../components/log-view.js';
import { Loading, LoadingNote, Status, when } from '../../components/ui.js';
import { useEventStream, useLoad } from '../../hooks.js';
import { DeploymentTable, trigger } from './deployment-table.js';
import { Processes } from './processes.js';
import { Releases } from './releases.js';
import { RollbackAction } from './rollback.js';
import { RequestSparklines } from './sparklines.js';
import { protectionNote, useEnvironments } from './environments-list.js';
import type { Deployment, SectionProps } from './types.js';

const EVENT_KINDS = [
  'image.updated',
  'release.updated',
  'deployment.updated',
  'scale.updated',
  'instance.crashed',
  'instance.restarted',
  'run.updated',
];

interface AppEvent {
  kind: string;
  id: string;
  status?: string;
  at: string;
}

type Selected = { kind: 'deployment' | 'image'; id: string; label: string } | null;

/** What serves in each environment: its newest complete deployment (production first). */
export function servingNow(deployments: Deployment[]): Deployment[] {
  return deployments
    .filter((d) => d.status === 'complete')
    .filter((d, n, all) => all.findIndex((o) => o.environment === d.environment) === n)
    .sort((x, y) => Number(y.environment === 'production') - Number(x.environment === 'production'));
}

/**
 * The release a rollback of `environment` goes back to: the newest older release that once served
 * there (what the API picks by default), named here so the confirmation can say "vN → vM".
 */
export function rollbackTarget(deployments: Deployment[], serving: Deployment | undefined): Deployment | undefined {
  if (!serving) return undefined;
  return deployments.find(
    (d) =>
      d.environment === serving.environment &&
      (d.status === 'complete' || d.status === 'rolled_back') &&
      d.release.version < serving.release.version,
  );
}

/** The overview answers three questions first: is it up, what changed, what is failing. */
export function OverviewSection({ app, org, project, reloadApp }: SectionProps) {
  const path = { params: { path: { application_id: app.id } } };
  const deployments = useLoad(() => ok(api.GET('/v1/applications/{application_id}/deployments', path)), [app.id]);
  const images = useLoad(() => ok(api.GET('/v1/images/{application_id}', path)), [app.id]);
  const releases = useLoad(() => ok(api.GET('/v1/releases/{application_id}', path)), [app.id]);
  const environments = useEnvironments(org, project);
  const [events, setEvents] = useState<AppEvent[]>([]);
  const [selected, setSelected] = useState<Selected>(null);

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

  const all = deployments.data?.items;
  const serving = all ? servingNow(all) : [];
  const production = serving.find((d) => d.environment === 'production') ?? serving[0];
  const target = all ? rollbackTarget(all, production) : undefined;
  const protectedSlugs = new Set((environments.data ?? []).filter((e) => e.protected).map((e) => e.slug));
  const productionProtection = protectionNote(environments.data?.find((e) => e.slug === (production?.environment ?? 'production')));

  return (
    <>
      <p class="muted live" data-live={live}>
        {live ? '● Live updates on' : 'Connecting to live updates…'}
      </p>
      {all === undefined ? (
        <Loading state={deployments} what="deployments">
          {() => null}
        </Loading>
      ) : (
        <Glance deployments={all} serving={production} />
      )}
      <RequestSparklines applicationId={app.id} refresh={events.length} />

      <section aria-labelledby="serving-h" class="panel">
        <h2 id="serving-h">Serving</h2>
        {all === undefined ? (
          <LoadingNote what="what serves" />
        ) : serving.length === 0 ? (
          <p class="muted empty">Nothing is serving yet: deploy to start.</p>
        ) : (
          serving.map((d) => <Serving key={d.id} deployment={d} refresh={events.length} isProtected={protectedSlugs.has(d.environment)} />)
        )}
        <Health applicationId={app.id} refresh={events.length} />
        <p class="muted">Repository: {app.github_repository ?? 'none set (see Settings)'}</p>
        <div class="buttons">
          <ConfirmAction
            label="Deploy"
            icon="deploy"
            title={`Deploy ${app.name}`}
            environment="production"
            changes={[
              {
                label: 'Release',
                from: production ? `v${production.release.version}` : null,
                to: 'a new release built from the repository',
              },
            ]}
            note={productionProtection}
            run={() => ok(api.POST('/v1/applications/{application_id}/deploy', { ...path, body: {} }))}
            done="Deploy started."
          />
          {production && (
            <RollbackAction
              app={app}
              org={org}
              project={project}
              serving={production}
              fallbackTarget={target}
              protectionNote={productionProtection}
              onDone={deployments.reload}
            />
          )}
        </div>
      </section>

      <Processes app={app} serving={countsOf(production?.deploy_metadata?.process_counts)} onScaled={reloadApp} />

      <section aria-labelledby="deployments-h" class="panel">
        <h2 id="deployments-h">Recent deployments</h2>
        <Loading state={deployments} what="deployments">
          {(page) =>
            page.items.length === 0 ? (
              <p class="muted empty">No deployments yet.</p>
            ) : (
              <div class="table-scroll">
                <DeploymentTable
                  label="Recent deployments"
                  deployments={page.items.slice(0, 5)}
                  onLog={(d) => setSelected({ kind: 'deployment', id: d.id, label: `Deployment of v${d.release.version}` })}
                />
              </div>
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
          <Loading state={images} what="builds">
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
        <Releases releases={releases} serving={serving} />
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

/** Three cards: is it up (what serves production), what changed (the last deployment), what is failing. */
function Glance({ deployments, serving }: { deployments: Deployment[]; serving: Deployment | undefined }) {
  const last = deployments[0];
  const running = deployments.filter((d) => !d.complete);
  // Failures newer than what serves: older ones were fixed by the deployment that serves now.
  const failing = deployments.filter((d) => d.error && (!serving || d.created > serving.created));
  return (
    <div class="glance" aria-label="At a glance">
      <div class={`card ${serving ? 'card-ok' : 'card-muted'}`} data-testid="glance-up">
        <Icon name={serving ? 'ok' : 'clock'} />
        <div>
          <h2 class="card-title">{serving ? 'Up' : 'Not serving'}</h2>
          <p>
            {serving
              ? `v${serving.release.version} in ${serving.environment} since ${when(serving.finished)}`
              : 'No complete deployment yet.'}
          </p>
        </div>
      </div>
      <div class={`card ${running.length > 0 ? 'card-busy' : 'card-muted'}`} data-testid="glance-changed">
        <Icon name={running.length > 0 ? 'busy' : 'history'} />
        <div>
          <h2 class="card-title">{running.length > 0 ? `${running.length} in progress` : 'Last change'}</h2>
          <p>
            {last
              ? `v${last.release.version} to ${last.environment} (${trigger(last, deployments)}), ${last.queue_reason ? 'queued' : last.status}, ${when(last.created)}`
              : 'Nothing deployed yet.'}
          </p>
        </div>
      </div>
      <div class={`card ${failing.length > 0 ? 'card-error' : 'card-ok'}`} data-testid="glance-failing">
        <Icon name={failing.length > 0 ? 'warning' : 'ok'} />
        <div>
          <h2 class="card-title">{failing.length > 0 ? `${failing.length} failing` : 'Nothing failing'}</h2>
          <p>
            {failing[0]
              ? `v${failing[0].release.version} in ${failing[0].environment}: ${failing[0].error_detail ?? failing[0].error_code ?? 'failed'}`
              : 'No failed deployment since the one serving.'}
          </p>
        </div>
      </div>
    </div>
  );
}

function Serving({ deployment: d, refresh, isProtected }: { deployment: Deployment; refresh: number; isProtected: boolean }) {
  const url = typeof d.deploy_metadata?.url === 'string' ? d.deploy_metadata.url : null;
  return (
    <div class="serving" data-environment={d.environment}>
      <h3>
        {d.environment}{' '}
        {isProtected && (
          <span class="status status-busy" data-testid={`protected-${d.environment}`}>
            protected
          </span>
        )}
      </h3>
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

const countsOf = (counts: unknown): Record<string, number> =>
  counts && typeof counts === 'object' ? (counts as Record<string, number>) : {};

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
    <div class="table-scroll">
      <table aria-label={`Instances in ${environment}`} data-testid={`instances-${environment}`}>
        <thead>
          <tr>
            <th>Instance</th>
            <th>State</th>
            <th>Restarts</th>
            <th>Last exit</th>
            <th class="wide-only">Release</th>
            <th class="wide-only">Since</th>
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
              <td class="wide-only">{i.release_version === null ? '—' : `v${i.release_version}`}</td>
              <td class="wide-only">{when(i.started_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
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
