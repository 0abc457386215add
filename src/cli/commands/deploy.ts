import type { Command } from 'commander';
import open from 'open';
import { ok, type Paths } from '../api.js';
import { Context, type AppDetail } from '../context.js';
import { CliError, EXIT, usage } from '../errors.js';
import { followLog, sleep, type LogKind } from '../follow.js';
import { failureLines } from './ps.js';
import { statusCommand } from './status.js';
import { checkLocalSource } from '../local-source.js';
import { deployImage } from './deploy-image.js';

type EnvDeploy =
  Paths['/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploys/{deploy_id}']['get']['responses']['200']['content']['application/json'];
type ServiceProgress = EnvDeploy['services'][number];

export const PHASES: Array<{ kind: LogKind; id: keyof ServiceProgress; title: string }> = [
  { kind: 'build', id: 'image_id', title: 'Build' },
  { kind: 'release', id: 'release_id', title: 'Release' },
  { kind: 'deployment', id: 'deployment_id', title: 'Deploy' },
];

export function deployCommands(program: Command) {
  program
    .command('deploy')
    .description('Build, release and deploy the application (to production, or --env)')
    .option('--ref <ref>', 'branch, tag or commit to build (default: the configured branch)')
    .option('--image <ref>', "deploy an image already pushed to a registry, no build (e.g. org/project/app:v2 in the platform's registry)")
    .option('-w, --wait', 'follow the build, release and deploy logs live; exit 1 with the reason when a phase fails')
    .option(
      '--include-uncommitted',
      "a local repository's changes not committed yet are deployed too (committed aside, the branch untouched)",
    )
    .addHelpText(
      'after',
      '\nIn CI:\n  slipway deploy --app acme/shop/web --wait --ref "$GIT_COMMIT"   # exit 0: serving; 1: failed (reason on stderr)',
    )
    .action(async (opts: { ref?: string; image?: string; wait?: boolean; includeUncommitted?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const env = ctx.envName();
      if (opts.image) {
        if (opts.ref || opts.includeUncommitted)
          throw usage('--image deploys an image as it is: --ref and --include-uncommitted do not apply');
        return deployImage(ctx, app, env, opts.image, opts.wait === true);
      }
      if (!opts.ref) opts.ref = checkLocalSource(app, { ...opts, warn: (text) => ctx.out.stderr.write(text) }).ref;
      const path = { workspace: app.organization_slug, project: app.project_slug, env };
      const record = await ok(
        ctx.api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploy', {
          params: { path, query: { service: app.slug, ...(opts.ref ? { ref: opts.ref } : {}) } },
        }),
      );
      if (!opts.wait) {
        const started = record.services[0];
        if (record.error) throw new CliError(`Deploy failed: ${record.error_detail ?? started?.error_detail}`);
        return ctx.out.result(
          record,
          () => `Deploying ${appPath(app)} to ${env} (${record.id}): \`slipway status\` shows how it goes (--wait follows it)`,
        );
      }
      const final = await followEnvDeploy(ctx, app, env, record, PHASES);
      const url = await deployedUrl(ctx, final);
      ctx.out.result({ ...final, url }, () => ctx.out.colors.green(`Deployed ${appPath(app)} to ${env}${url ? `: ${url}` : ''}`));
    });

  program
    .command('promote')
    .description('Ship the release one environment runs to another, without rebuilding')
    .requiredOption('--from <env>', 'source environment')
    .option('--to <env>', 'target environment', 'production')
    .option('--target-config', "use the target environment's configuration instead of the source release's")
    .option('-w, --wait', 'follow the deploy; exit 1 when it fails')
    .action(async (opts: { from: string; to: string; targetConfig?: boolean; wait?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const record = await ok(
        ctx.api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/promote', {
          params: { path: { workspace: app.organization_slug, project: app.project_slug, env: opts.to } },
          body: { from: opts.from, service: app.slug, ...(opts.targetConfig ? { configuration: 'target' as const } : {}) },
        }),
      );
      const final = opts.wait
        ? await followEnvDeploy(
            ctx,
            app,
            opts.to,
            record,
            PHASES.filter((p) => p.kind === 'deployment'),
          )
        : record;
      if (final.error) throw new CliError(`Promotion failed: ${final.error_detail}`);
      ctx.out.result(final, () => `Promot${opts.wait ? 'ed' : 'ing'} ${appPath(app)} from ${opts.from} to ${opts.to} (${final.id})`);
    });

  statusCommand(program);

  program
    .command('scale')
    .description('Set instance counts (and pod classes) per process type')
    .argument('<type=count...>', 'e.g. web=3 worker=1')
    .option('--pod-class <type=class...>', 'e.g. web=m1.large')
    .action(async (pairs: string[], opts: { podClass?: string[] }, command: Command) => {
      const ctx = Context.of(command);
      const counts = Object.fromEntries(
        pairs.map((p) => {
          const [type, count] = splitPair(p, 'type=count');
          if (!/^\d+$/.test(count)) throw usage(`'${p}': the count must be a whole number`);
          return [type, Number(count)];
        }),
      );
      const classes = Object.fromEntries((opts.podClass ?? []).map((p) => splitPair(p, 'type=class')));
      const app = await ctx.app();
      const scaled = await ok(
        ctx.api.POST('/v1/applications/{application_id}/scale', {
          params: { path: { application_id: app.id } },
          body: { process_counts: counts, ...(Object.keys(classes).length > 0 ? { process_pod_classes: classes as never } : {}) },
        }),
      );
      ctx.out.result(
        scaled,
        () =>
          `Scaled ${appPath(app)}: ${Object.entries(scaled.process_counts)
            .map(([k, v]) => `${k}=${v}${scaled.process_pod_classes[k] ? ` (${scaled.process_pod_classes[k]})` : ''}`)
            .join(' ')}`,
      );
    });

  program
    .command('open')
    .description("The application's URL: opened in a browser on a terminal, printed otherwise")
    .option('--print', 'print it, never open a browser')
    .action(async (opts: { print?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const deployments = await ok(
        ctx.api.GET('/v1/applications/{application_id}/deployments', {
          params: { path: { application_id: app.id }, query: { per_page: 20 } },
        }),
      );
      const url = deployments.items.map((d) => d.deploy_metadata?.url).find((u): u is string => typeof u === 'string');
      if (!url) throw new CliError(`${appPath(app)} has no URL yet: deploy it first`, EXIT.notFound);
      if (opts.print || ctx.options.json || !process.stdout.isTTY) return ctx.out.result({ url }, () => url);
      await open(url);
      ctx.out.note(`Opened ${url}`);
    });
}

export function appPath(app: AppDetail) {
  return `${app.organization_slug}/${app.project_slug}/${app.slug}`;
}

/** Where the deployed service answers (the router URL its deployment recorded). */
export async function deployedUrl(ctx: Context, record: EnvDeploy): Promise<string | null> {
  const id = record.services[0]?.deployment_id;
  if (!id) return null;
  const d = await ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: id } } }));
  return typeof d.deploy_metadata?.url === 'string' ? d.deploy_metadata.url : null;
}

/** A failed deployment's facts (its output already showed in the log above). */
async function printFailure(ctx: Context, deploymentId: string, write: (line: string) => void) {
  const d = await ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: deploymentId } } }));
  if (!d.failure) return;
  write(ctx.out.colors.bold(ctx.out.colors.red('==> Why it failed')));
  for (const line of failureLines(d.failure, { output: false })) write(line);
}

function splitPair(pair: string, shape: string): [string, string] {
  const at = pair.indexOf('=');
  if (at <= 0 || at === pair.length - 1) throw usage(`'${pair}' is not ${shape}`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

/**
 * Follows an environment deploy of one service phase by phase: each phase's log is printed
 * live as soon as its record exists; the first failing phase ends it with its reason.
 */
export async function followEnvDeploy(
  ctx: Context,
  app: AppDetail,
  env: string,
  first: EnvDeploy,
  phases: typeof PHASES,
): Promise<EnvDeploy> {
  const path = { workspace: app.organization_slug, project: app.project_slug, env, deploy_id: first.id };
  const refresh = () =>
    ok(ctx.api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploys/{deploy_id}', { params: { path } }));
  const out = ctx.out;
  // Logs are data for people (stdout); with --json stdout carries only the final record.
  const write = (line: string) => (out.json ? out.stderr : out.stdout).write(`${line}\n`);
  let record = first;
  const service = () => record.services.find((s) => s.service === app.slug) ?? record.services[0];
  const fail = (reason: string | null | undefined): never => {
    throw new CliError(`Deploy failed: ${reason ?? record.error_detail ?? 'unknown reason'}`, EXIT.failure);
  };
  for (const phase of phases) {
    const spinner = out.spinner(`Waiting for the ${phase.title.toLowerCase()}…`).start();
    while (!service()?.[phase.id] && record.status === 'deploying' && service()?.status !== 'error') {
      await sleep(1000);
      record = await refresh();
    }
    spinner.stop();
    const id = service()?.[phase.id];
    if (!id) fail(service()?.error_detail ?? record.error_detail);
    if (phase.kind === 'build') await showQueueWait(ctx, String(id), write);
    write(out.colors.bold(out.colors.cyan(`==> ${phase.title}`)));
    const outcome = await followLog(ctx, phase.kind, String(id), write);
    if (outcome.status === 'error') {
      if (phase.kind === 'deployment') await printFailure(ctx, String(id), write);
      fail(`${phase.title.toLowerCase()} failed: ${outcome.error_detail ?? 'see the log above'}`);
    }
  }
  // The record settles from its phases' records: read it until it has.
  const spinner = out.spinner('Finishing…').start();
  record = await refresh();
  while (record.status === 'deploying') {
    await sleep(500);
    record = await refresh();
  }
  spinner.stop();
  if (record.status === 'error') fail(record.error_detail);
  return record;
}

/** While the chain's job waits in the queue, says why (once per change): behind which job, or which limit. */
async function showQueueWait(ctx: Context, imageId: string, write: (line: string) => void) {
  let shown: string | null = null;
  for (;;) {
    const log = await ok(ctx.api.GET('/v1/images/{image_id}/log', { params: { path: { image_id: imageId } } }));
    const reason = log.queue_reason ?? null;
    if (!reason) return;
    if (reason !== shown) write(ctx.out.colors.yellow(`Queued: ${reason}`));
    shown = reason;
    await sleep(1000);
  }
}
