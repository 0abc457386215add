import type { Command } from 'commander';
import { ok, type Paths, type Schemas } from '../api.js';
import { Context } from '../context.js';
import { appPath } from './deploy.js';

type Deployment = Schemas['DeploymentSummary'];
type Instance = Schemas['Instance'];
type Release = Schemas['ReleaseDetail'];

/** Process types that run once per release or deployment, never as instances. */
const ONE_OFF_TYPES = new Set(['release', 'postdeploy']);

/**
 * `slipway status`: what serves now (release and the image it runs, so the two numbers never
 * read as one), where (URL), with which processes (every type of the serving release, how many
 * run, how to start one scaled to 0), then the newest build, release and deployment.
 */
export function statusCommand(program: Command) {
  program
    .command('status')
    .description('The application: what serves (release, image, URL, processes), then the latest build, release and deployment')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const environment = ctx.options.env;
      const [pipeline, deployments, instances] = await Promise.all([
        ok(
          ctx.api.GET('/v1/applications/{application_id}/pipeline-status', {
            params: { path: { application_id: app.id }, query: environment ? { environment } : {} },
          }),
        ),
        ok(
          ctx.api.GET('/v1/applications/{application_id}/deployments', {
            params: { path: { application_id: app.id }, query: { per_page: 20 } },
          }),
        ),
        ok(
          ctx.api.GET('/v1/applications/{application_id}/instances', {
            params: { path: { application_id: app.id }, query: environment ? { environment } : {} },
          }),
        ),
      ]);
      const inEnvironment = deployments.items.filter((d) => (environment ? d.environment === environment : d.environment === 'production'));
      const serving = inEnvironment.find((d) => d.status === 'complete');
      const release = serving
        ? await ok(ctx.api.GET('/v1/releases/{release_id}/detail', { params: { path: { release_id: serving.release.id } } }))
        : null;
      const stage = (s: { version: number | null; status: string; error_detail: string | null } | null, what: string) =>
        s
          ? `${what} ${s.version !== null ? `v${s.version} ` : ''}${ctx.out.status(s.status)}${s.error_detail ? ` (${s.error_detail})` : ''}`
          : '-';
      const url = urlOf(serving, inEnvironment);
      const processes = processLines(app.process_counts, release, instances);
      ctx.out.fields({ application: app, pipeline, serving: serving ?? null, url, processes }, [
        ['Application', `${appPath(app)} (${serving?.environment ?? environment ?? 'production'})`],
        ['Serving', serving && release ? servingLine(release, serving) : 'nothing yet: deploy it with `slipway deploy --wait`'],
        ['URL', url ?? (serving ? 'none: the runtime reported no address (see `slipway doctor`)' : '-')],
        ['Processes', processes.length > 0 ? processes.join('\n' + ' '.repeat('Processes'.length + 2)) : '-'],
        ['Latest build', stage(pipeline.build, 'image')],
        ['Latest release', stage(pipeline.release, 'release')],
        ['Latest deploy', stage(pipeline.deploy, 'release')],
        ...crashLines(pipeline.instances),
      ]);
    });
}

function servingLine(release: Release, serving: Deployment): string {
  const commit = release.commit_sha ?? release.image?.commit_sha;
  const image = release.image ? `image v${release.image.version}${commit ? ` (commit ${commit.slice(0, 7)})` : ''}` : 'no image';
  return `release v${release.version} on ${image}, deployed ${serving.finished ?? serving.created}`;
}

/** The serving deployment's address; an older deployment's when the runtime gave none this time. */
function urlOf(serving: Deployment | undefined, deployments: Deployment[]): string | null {
  const meta = (d: Deployment | undefined) => (d?.deploy_metadata ?? {}) as { url?: unknown; hostname?: unknown };
  const fromServing = meta(serving).url;
  if (typeof fromServing === 'string') return fromServing;
  const earlier = deployments.map((d) => meta(d).url).find((u): u is string => typeof u === 'string');
  if (earlier) return earlier;
  const hostname = meta(serving).hostname;
  return typeof hostname === 'string' ? `http://${hostname}` : null;
}

/** One line per process type of the serving release: wanted and running counts, restarts, the way to start a type at 0. */
function processLines(counts: Record<string, number>, release: Release | null, instances: Instance[]): string[] {
  const types = new Set([...Object.keys(release?.processes ?? {}), ...Object.keys(counts), ...instances.map((i) => i.process_type)]);
  const lines: string[] = [];
  for (const type of [...types].sort((a, b) => (a === 'web' ? -1 : b === 'web' ? 1 : a.localeCompare(b)))) {
    if (ONE_OFF_TYPES.has(type)) continue;
    const wanted = counts[type] ?? (type === 'web' ? 1 : 0);
    const mine = instances.filter((i) => i.process_type === type);
    const up = mine.filter((i) => i.state === 'healthy' || i.state === 'running').length;
    const restarts = mine.reduce((n, i) => n + i.restarts, 0);
    const crashed = mine.find((i) => i.state === 'crashed' || i.last_exit);
    if (wanted === 0 && mine.length === 0) {
      lines.push(`${type}: 0 (scaled to 0; start it: slipway scale ${type}=1)`);
      continue;
    }
    const states = [...new Set(mine.map((i) => i.state))].join(', ') || 'none yet';
    const extra = [
      restarts > 0 ? `${restarts} restart${restarts === 1 ? '' : 's'}` : '',
      crashed?.last_exit ? `last exit: ${crashed.last_exit}` : '',
    ].filter(Boolean);
    lines.push(`${type}: ${up}/${wanted} up (${states})${extra.length ? `, ${extra.join(', ')}` : ''}`);
  }
  return lines;
}

type InstancesStatus =
  Paths['/v1/applications/{application_id}/pipeline-status']['get']['responses']['200']['content']['application/json']['instances'];

/** Crash loops in `status`: which instances restarted, how often, and why they last exited. */
function crashLines(instances: InstancesStatus): Array<[string, string]> {
  if (!instances || instances.crashing.length === 0) return [];
  const what = instances.crashing
    .map((c) => `${c.name} ${c.state === 'crashed' ? 'crashed' : 'restarted'} ${c.restarts} time(s), last ${c.last_exit ?? 'exit unknown'}`)
    .join('; ');
  return [['Crashes', `${what} (\`slipway ps\`, \`slipway logs\`)`]];
}
