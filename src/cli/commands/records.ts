import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError } from '../errors.js';
import { followLog, readLog, type LogKind } from '../follow.js';
import { terminalSafe, when } from '../output.js';
import { positiveInt } from './auth.js';
import { failureLines } from './ps.js';

/** `v3` or `3` → a version number; anything else is taken as an id. */
function versionOf(ref: string): number | null {
  const m = /^v?(\d+)$/.exec(ref);
  return m ? Number(m[1]) : null;
}

interface PageOptions {
  page?: number;
  perPage?: number;
}

const pageQuery = (o: PageOptions) => ({ ...(o.page ? { page: o.page } : {}), ...(o.perPage ? { per_page: o.perPage } : {}) });

function withPaging(c: Command) {
  return c
    .option('--page <n>', 'page', (v) => positiveInt(v, '--page'))
    .option('--per-page <n>', 'items per page', (v) => positiveInt(v, '--per-page'));
}

export function recordCommands(program: Command) {
  const builds = program.command('builds').alias('images').description("The application's builds (images)");
  withPaging(builds.command('list').description('Builds, newest first')).action(async (o: PageOptions, command: Command) => {
    const ctx = Context.of(command);
    const app = await ctx.app();
    const page = await ok(
      ctx.api.GET('/v1/images/{application_id}', { params: { path: { application_id: app.id }, query: pageQuery(o) } }),
    );
    ctx.out.table(
      page.items,
      [
        { header: 'VERSION', value: (i) => `v${i.version}` },
        { header: 'STATUS', value: (i) => ctx.out.status(i.error ? 'error' : i.built ? 'built' : 'building') },
        { header: 'ID', value: (i) => i.id },
        { header: 'CREATED', value: (i) => when(i.created) },
      ],
      'no builds yet: `slipway deploy`',
    );
  });
  builds
    .command('get')
    .description('A build (v<version> or id)')
    .argument('<build>')
    .action(async (ref: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const image = await ok(ctx.api.GET('/v1/images/{image_id}/detail', { params: { path: { image_id: await buildId(ctx, ref) } } }));
      ctx.out.fields(image, [
        ['Build', `v${image.version}`],
        ['Id', image.id],
        ['Status', ctx.out.status(image.error ? 'error' : image.built ? 'built' : 'building')],
        ['Error', image.error_detail],
        ['Ref', image.build_ref],
        ['Commit', image.commit_sha],
        ['Image', image.image_id],
        ['Processes', image.processes],
        ['Created', when(image.created)],
      ]);
    });
  builds
    .command('create')
    .description('Build without deploying')
    .option('--ref <ref>', 'branch, tag or commit')
    .option('-f, --follow', 'follow the build log; exit 1 when it fails')
    .action(async (o: { ref?: string; follow?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const started = await ok(
        ctx.api.POST('/v1/images/{application_id}/build', {
          params: { path: { application_id: app.id } },
          body: o.ref ? { ref: o.ref } : {},
        }),
      );
      if (!o.follow) return ctx.out.result(started, () => `Building ${app.slug} v${started.version} (${started.image_id})`);
      await printLog(ctx, 'build', started.image_id, true);
    });
  logCommand(builds, 'build', (ctx, ref) => buildId(ctx, ref));

  const releases = program.command('releases').description("The application's releases (image + frozen configuration)");
  withPaging(releases.command('list').description('Releases, newest first')).action(async (o: PageOptions, command: Command) => {
    const ctx = Context.of(command);
    const app = await ctx.app();
    const page = await ok(
      ctx.api.GET('/v1/releases/{application_id}', { params: { path: { application_id: app.id }, query: pageQuery(o) } }),
    );
    ctx.out.table(
      page.items,
      [
        { header: 'VERSION', value: (r) => `v${r.version}` },
        { header: 'STATUS', value: (r) => ctx.out.status(r.error ? 'error' : r.built ? 'built' : 'building') },
        { header: 'ID', value: (r) => r.id },
        { header: 'CREATED', value: (r) => when(r.created) },
      ],
      'no releases yet',
    );
  });
  releases
    .command('get')
    .description('A release (v<version> or id): image, configuration names, changes')
    .argument('<release>')
    .action(async (ref: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const r = await ok(ctx.api.GET('/v1/releases/{release_id}/detail', { params: { path: { release_id: await releaseId(ctx, ref) } } }));
      ctx.out.fields(r, [
        ['Release', `v${r.version}`],
        ['Id', r.id],
        ['Build', r.image && `v${r.image.version}`],
        ['Commit', r.image?.commit_sha],
        ['Configuration', (r.configuration ?? []).map((v) => v.name).join(', ')],
        ['Created', when(r.created)],
      ]);
    });
  logCommand(releases, 'release', (ctx, ref) => releaseId(ctx, ref));

  const deployments = program.command('deployments').alias('deploys').description("The application's deployments (production)");
  // `show` reads as people say it; `get` as every other record.
  withPaging(deployments.command('list').description('Deployments, newest first')).action(async (o: PageOptions, command: Command) => {
    const ctx = Context.of(command);
    const app = await ctx.app();
    const page = await ok(
      ctx.api.GET('/v1/applications/{application_id}/deployments', { params: { path: { application_id: app.id }, query: pageQuery(o) } }),
    );
    ctx.out.table(
      page.items,
      [
        { header: 'ID', value: (d) => d.id },
        { header: 'RELEASE', value: (d) => `v${d.release.version}` },
        { header: 'STATUS', value: (d) => ctx.out.status(d.status) },
        { header: 'ERROR', value: (d) => d.error_detail },
        { header: 'STARTED', value: (d) => when(d.started) },
        { header: 'FINISHED', value: (d) => when(d.finished) },
      ],
      'no deployments yet',
    );
  });
  deployments
    .command('get')
    .alias('show')
    .description('A deployment; a failed one with why: exit, health check, port, its last lines, a hint')
    .argument('<id>')
    .action(async (id: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const d = await ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: id } } }));
      const { deploy_log: _log, ...summary } = d;
      ctx.out.fields(summary, [
        ['Deployment', d.id],
        ['Release', `v${d.release.version}`],
        ['Status', ctx.out.status(d.status)],
        ['Queued', d.queue_reason],
        ['Error', d.error_detail],
        ['URL', d.deploy_metadata?.url],
        ['Started', when(d.started)],
        ['Finished', when(d.finished)],
      ]);
      if (d.failure && !ctx.out.json) ctx.out.print(['', ...failureLines(d.failure, { output: true })]);
    });
  logCommand(deployments, 'deployment', async (ctx, id) => {
    ctx.requireKey();
    return id;
  });
}

function logCommand(parent: Command, kind: LogKind, resolve: (ctx: Context, ref: string) => Promise<string>) {
  parent
    .command('log')
    .description(`A ${kind}'s log`)
    .argument(`<${kind}>`)
    .option('-f, --follow', 'print new lines as they are written until it ends; exit 1 when it failed')
    .action(async (ref: string, o: { follow?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      await printLog(ctx, kind, await resolve(ctx, ref), Boolean(o.follow));
    });
}

async function printLog(ctx: Context, kind: LogKind, id: string, follow: boolean) {
  if (!follow) {
    const log = await readLog(ctx, kind, id);
    return ctx.out.result(log, () => terminalSafe(log.log_text.replace(/\n$/, '')));
  }
  const lines: string[] = [];
  const outcome = await followLog(ctx, kind, id, (line) => (ctx.out.json ? lines.push(line) : ctx.out.print(line)));
  if (ctx.out.json) ctx.out.printJson({ ...outcome, lines });
  if (outcome.status === 'error') throw new CliError(`The ${kind} failed: ${outcome.error_detail ?? 'see the log'}`);
}

async function buildId(ctx: Context, ref: string): Promise<string> {
  const version = versionOf(ref);
  if (version === null) {
    ctx.requireKey();
    return ref;
  }
  const app = await ctx.app();
  const page = await ok(
    ctx.api.GET('/v1/images/{application_id}', { params: { path: { application_id: app.id }, query: { per_page: 100 } } }),
  );
  const found = page.items.find((i) => i.version === version);
  if (!found) throw new CliError(`No build v${version} among the latest builds of ${app.slug}`, 3);
  return found.id;
}

export async function releaseId(ctx: Context, ref: string): Promise<string> {
  const version = versionOf(ref);
  if (version === null) {
    ctx.requireKey();
    return ref;
  }
  const app = await ctx.app();
  const page = await ok(
    ctx.api.GET('/v1/releases/{application_id}', { params: { path: { application_id: app.id }, query: { per_page: 100 } } }),
  );
  const found = page.items.find((r) => r.version === version);
  if (!found) throw new CliError(`No release v${version} among the latest releases of ${app.slug}`, 3);
  return found.id;
}
