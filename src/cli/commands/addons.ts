import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { when } from '../output.js';

/** `slipway addons …`: an organization's Postgres and Redis add-ons (issue 31). */
export function addonCommands(program: Command) {
  const addons = program
    .command('addons')
    .description("The organization's add-ons: Postgres and Redis servers attached to applications")
    .option('--org <slug>', 'the organization (default: that of --app / the linked application)');

  /** --org, else the organization part of the application's name (no request needed). */
  const orgOf = (ctx: Context, command: Command): string => {
    const given = (command.optsWithGlobals() as { org?: string }).org;
    return given ?? ctx.appName().split('/')[0]!;
  };
  const path = (ctx: Context, command: Command, addon: string) => ({ params: { path: { org_slug: orgOf(ctx, command), addon } } });
  type Addon = {
    name: string;
    kind: string;
    plan: string;
    status: string;
    status_detail: string | null;
    attachments: Array<{ id: string; application: string; environment: string; variable: string }>;
    purge_after: string | null;
  };
  const describe = (a: Addon) => [
    `${a.name}: ${a.kind} (${a.plan}), ${a.status}${a.status_detail ? `: ${a.status_detail}` : ''}`,
    ...a.attachments.map((t) => `  attached to ${t.application} (${t.environment}) as ${t.variable}  [${t.id}]`),
    ...(a.purge_after ? [`  deleted: can be undeleted until ${when(a.purge_after)}`] : []),
  ];
  const released = (r: { releases: Array<{ environment: string; version: number }> }) =>
    r.releases.length
      ? r.releases.map((x) => `  release v${x.version} of ${x.environment} is being deployed`)
      : ['  (nothing serves there yet: the next deploy gets it)'];

  addons
    .command('list', { isDefault: true })
    .description('Add-ons with their plan, status and attachments')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons', { params: { path: { org_slug: orgOf(ctx, command) } } }));
      ctx.out.table(
        list,
        [
          { header: 'NAME', value: (a) => a.name },
          { header: 'KIND', value: (a) => a.kind },
          { header: 'PLAN', value: (a) => a.plan },
          { header: 'STATUS', value: (a) => a.status },
          { header: 'ATTACHED TO', value: (a) => a.attachments.map((t) => `${t.application} (${t.environment})`).join(', ') },
        ],
        'no add-ons: `slipway addons create <name> --kind postgres`',
      );
    });
  addons
    .command('create')
    .description('Create an add-on (its own server; answers once it accepts connections)')
    .argument('<name>')
    .requiredOption('--kind <kind>', 'postgres or redis')
    .option('--plan <plan>', 'hobby (default) or standard')
    .action(async (name: string, o: { kind: string; plan?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      if (o.kind !== 'postgres' && o.kind !== 'redis') throw new CliError('--kind must be postgres or redis', EXIT.usage);
      const a = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/addons', {
          params: { path: { org_slug: orgOf(ctx, command) } },
          body: { name, kind: o.kind, ...(o.plan ? { plan: o.plan } : {}) },
        }),
      );
      ctx.out.result(a, () => describe(a));
    });
  addons
    .command('show')
    .description('An add-on: status, limits, attachments')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const a = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}', path(ctx, command, name)));
      ctx.out.result(a, () => [
        ...describe(a),
        `  limits: ${a.limits.memory_mib} MiB, ${a.limits.cpu_millicores} millicores, ${a.limits.connections} connections`,
      ]);
    });
  addons
    .command('attach')
    .description('Attach to the application (--app) in --env: its URL becomes a secret variable, in a new release')
    .argument('<name>')
    .option('--as <variable>', 'the variable (default DATABASE_URL or REDIS_URL)')
    .action(async (name: string, o: { as?: string }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/attachments', {
          params: { path: { org_slug: (command.optsWithGlobals() as { org?: string }).org ?? ctx.appName().split('/')[0]!, addon: name } },
          body: { application_id: app.id, environment: ctx.envName(), ...(o.as ? { as: o.as } : {}) },
        }),
      );
      ctx.out.result(r, () => [`Attached ${name} to ${app.name} (${ctx.envName()})`, ...released(r)]);
    });
  addons
    .command('detach')
    .description('Detach from the application (--app) in --env: the variable goes, in a new release')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const a = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}', path(ctx, command, name)));
      const attachment = a.attachments.find((t) => t.application_id === app.id && t.environment === ctx.envName());
      if (!attachment) throw new CliError(`${name} is not attached to ${app.name} (${ctx.envName()})`, EXIT.usage);
      const r = await ok(
        ctx.api.DELETE('/v1/organizations/{org_slug}/addons/{addon}/attachments/{attachment_id}', {
          params: { path: { ...path(ctx, command, name).params.path, attachment_id: attachment.id } },
        }),
      );
      ctx.out.result(r, () => [`Detached ${name} from ${app.name} (${ctx.envName()})`, ...released(r)]);
    });
  addons
    .command('resize')
    .description('Another plan (the server restarts with its limits)')
    .argument('<name>')
    .requiredOption('--plan <plan>', 'hobby or standard')
    .action(async (name: string, o: { plan: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const a = await ok(
        ctx.api.PATCH('/v1/organizations/{org_slug}/addons/{addon}', { ...path(ctx, command, name), body: { plan: o.plan } }),
      );
      ctx.out.result(a, () => describe(a));
    });
  addons
    .command('delete')
    .description('Delete (stopped now; undeletable during the grace period; detach it first)')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const a = await ok(ctx.api.DELETE('/v1/organizations/{org_slug}/addons/{addon}', path(ctx, command, name)));
      ctx.out.result(a, () => describe(a));
    });
  addons
    .command('undelete')
    .description('Bring back a deleted add-on with its data')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const a = await ok(ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/undelete', path(ctx, command, name)));
      ctx.out.result(a, () => describe(a));
    });
  addons
    .command('rotate')
    .description('New credentials, released to every attached application')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const r = await ok(ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/rotate', path(ctx, command, name)));
      ctx.out.result(r, () => [`Rotated the credentials of ${name}`, ...released(r)]);
    });
  addons
    .command('psql')
    .description("SQL on a Postgres add-on as its applications' user: -c once, else statements from stdin (one per line ending in ;)")
    .argument('<name>')
    .option('-c, --command <sql>', 'run this and exit')
    .action(async (name: string, o: { command?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const run = async (sql: string) => {
        const r = await ok(
          ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/query', { ...path(ctx, command, name), body: { sql } }),
        );
        if (ctx.out.json) return ctx.out.printJson(r);
        if (r.columns.length > 0) {
          ctx.out.table(
            r.rows,
            r.columns.map((header, i) => ({ header, value: (row: Array<string | null>) => row[i] ?? 'NULL' })),
            '(0 rows)',
          );
        }
        ctx.out.note(
          `${r.command}${r.row_count !== null ? ` ${r.row_count}` : ''}${r.truncated ? ` (first ${r.rows.length} rows shown)` : ''}`,
        );
      };
      if (o.command) return run(o.command);
      // Statements end with `;` at the end of a line; errors are shown and the session goes on.
      const lines = createInterface({
        input: process.stdin,
        ...(process.stdin.isTTY ? { output: process.stderr, prompt: `${name}=> ` } : {}),
      });
      let pending = '';
      if (process.stdin.isTTY) lines.prompt();
      for await (const line of lines) {
        pending += `${line}\n`;
        if (!line.trimEnd().endsWith(';')) continue;
        const sql = pending;
        pending = '';
        await run(sql).catch((err: Error) => {
          if (!process.stdin.isTTY) throw err;
          ctx.out.warn(err.message);
        });
        if (process.stdin.isTTY) lines.prompt();
      }
      if (pending.trim()) await run(pending);
    });
}
