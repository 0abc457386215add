import { input } from '@inquirer/prompts';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { when } from '../output.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const POLL_MS = 500;

/**
 * `slipway addons backups list|create`, `addons restore`, `addons drill`: a Postgres add-on's
 * backups, restores into a new add-on (a fork) and restore drills (issue 31).
 */
export function addonBackupCommands(addons: Command, orgOf: (ctx: Context, command: Command) => string) {
  const path = (ctx: Context, command: Command, addon: string) => ({ params: { path: { org_slug: orgOf(ctx, command), addon } } });
  const size = (bytes: number | null) => (bytes === null ? '' : `${(bytes / 1024 / 1024).toFixed(1)} MiB`);

  const backups = addons.command('backups').description("A Postgres add-on's base backups (its WAL is archived continuously between them)");
  backups
    .command('list', { isDefault: true })
    .description('Base backups, the window a restore can reach, and the last restore drill')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const r = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}/backups', path(ctx, command, name)));
      if (ctx.out.json) return ctx.out.printJson(r);
      ctx.out.table(
        r.backups,
        [
          { header: 'ID', value: (b) => b.id },
          { header: 'STATUS', value: (b) => b.status + (b.detail ? `: ${b.detail}` : '') },
          { header: 'TRIGGER', value: (b) => b.trigger },
          { header: 'FINISHED', value: (b) => (b.finished ? when(b.finished) : '') },
          { header: 'SIZE', value: (b) => size(b.size_bytes) },
          // Where it is kept: `local` (the add-on's repository) or `s3` (BACKUP_S3_*).
          { header: 'WHERE', value: (b) => b.location },
        ],
        `no backups yet: \`slipway addons backups create ${name}\``,
      );
      ctx.out.note(
        r.window
          ? `restorable to any time from ${when(r.window.earliest)} to ${r.window.latest ? 'now' : 'its last backup'} (retention ${r.retention_days} days)`
          : 'not restorable yet',
      );
      ctx.out.note(
        `last proven restorable: ${r.last_proven_restorable_at ? when(r.last_proven_restorable_at) : 'never'}` +
          (r.last_drill && !r.last_drill.ok ? ` (last drill ${when(r.last_drill.at)} FAILED: ${r.last_drill.detail})` : ''),
      );
    });
  backups
    .command('create')
    .description('Take a base backup now')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const b = await ok(ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/backups', path(ctx, command, name)));
      ctx.out.result(b, () => `Backup ${b.id} of ${name}: ${b.status} (${size(b.size_bytes)})`);
    });

  addons
    .command('restore')
    .description('Restore a Postgres add-on into a NEW add-on (a fork): to a time, a backup id, or a restore point')
    .argument('<name>')
    .requiredOption(
      '--to <time|backup>',
      'an ISO time inside the retention window, a backup id, release:<release id> (before its migrations), or restore-point:<name>',
    )
    .option('--as <fork>', 'the new add-on (default: <name>-fork)')
    .option('--no-wait', 'answer once the restore started')
    .action(async (name: string, o: { to: string; as?: string; wait: boolean }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const to = o.to.startsWith('restore-point:')
        ? { restore_point: o.to.slice('restore-point:'.length) }
        : o.to.startsWith('release:') && UUID.test(o.to.slice('release:'.length))
          ? { release_id: o.to.slice('release:'.length) }
          : UUID.test(o.to)
            ? { backup_id: o.to }
            : Number.isNaN(Date.parse(o.to))
              ? null
              : { time: new Date(o.to).toISOString() };
      if (!to)
        throw new CliError(
          '--to must be a time (e.g. 2026-11-26T01:02:03Z), a backup id, release:<release id> or restore-point:<name>',
          EXIT.usage,
        );
      const fork = o.as ?? `${name}-fork`;
      let a = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/restore', { ...path(ctx, command, name), body: { name: fork, ...to } }),
      );
      let shown = '';
      // Progress: the fork's status_detail, each step once, until it runs or fails.
      while (o.wait && a.status === 'creating') {
        if (a.status_detail && a.status_detail !== shown) ctx.out.note((shown = a.status_detail));
        await new Promise((r) => setTimeout(r, POLL_MS));
        a = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}', path(ctx, command, fork)));
      }
      if (a.status === 'failed') throw new CliError(`Restore into ${fork} failed: ${a.status_detail}`);
      ctx.out.result(a, () =>
        a.status === 'running'
          ? [`Restored ${a.restored_from} into ${fork} (running; attach it with \`slipway addons attach ${fork}\`)`]
          : [`Restoring ${a.restored_from} into ${fork}: ${a.status_detail}`],
      );
    });

  addons
    .command('swap')
    .description('Point the application (--app, --env) at this add-on instead of the one it uses (e.g. a restored fork), in a new release')
    .argument('<name>', 'the add-on to use from now on')
    .requiredOption('--replaces <addon>', 'the add-on the application uses now (it stays, detached)')
    .option('--yes', 'swap without asking')
    .action(async (name: string, o: { replaces: string; yes?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const old = await ok(ctx.api.GET('/v1/organizations/{org_slug}/addons/{addon}', path(ctx, command, o.replaces)));
      const attachment = old.attachments.find((t) => t.application_id === app.id && t.environment === ctx.envName());
      if (!attachment) throw new CliError(`${o.replaces} is not attached to ${app.name} (${ctx.envName()})`, EXIT.usage);
      if (!o.yes) {
        // Never silently: a script must say --yes, a person types the add-on's name.
        if (!process.stdin.isTTY) throw new CliError('Not a terminal: pass --yes to swap without confirmation', EXIT.usage);
        const typed = await input({
          message: `${app.name} (${ctx.envName()}) will use ${name} instead of ${o.replaces} as ${attachment.variable}. Type ${name} to confirm:`,
        });
        if (typed.trim() !== name) throw new CliError(`'${typed.trim()}' is not ${name}: nothing was swapped`, EXIT.usage);
      }
      const r = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/swap', {
          ...path(ctx, command, name),
          body: { attachment_id: attachment.id, confirm: true },
        }),
      );
      ctx.out.result(r, () => [
        `${app.name} (${ctx.envName()}) now uses ${name} as ${attachment.variable} (${o.replaces} stays, detached)`,
        ...r.releases.map((x) => `  release v${x.version} of ${x.environment} is being deployed`),
      ]);
    });

  addons
    .command('drill')
    .description('A restore drill now: the latest backup restored into a scratch server, started, rows counted per table')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const d = await ok(ctx.api.POST('/v1/organizations/{org_slug}/addons/{addon}/drills', path(ctx, command, name)));
      ctx.out.result(d, () =>
        d.ok
          ? [
              `Restore drill of ${name} passed in ${(d.duration_ms / 1000).toFixed(1)} s (backup ${d.backup_id})`,
              ...Object.entries(d.tables).map(([table, rows]) => `  ${table}: ${rows} rows`),
              ...(d.check ? [`  check query: ${d.check.rows} rows, first value ${d.check.first_value ?? 'NULL'}`] : []),
            ]
          : [`Restore drill of ${name} FAILED after ${(d.duration_ms / 1000).toFixed(1)} s: ${d.detail}`],
      );
      if (!d.ok) process.exitCode = EXIT.failure;
    });

  addons
    .command('drill-check')
    .description("Set the query every restore drill runs on its restored copy (read-only, as the application's role, 30 s at most)")
    .argument('<name>')
    .argument('[query]', 'e.g. "SELECT count(*) FROM orders"; a failing query fails the drill')
    .option('--clear', 'remove the check query')
    .action(async (name: string, query: string | undefined, o: { clear?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      if (!o.clear && !query) throw new CliError('Give the check query, or --clear to remove it', EXIT.usage);
      const a = await ok(
        ctx.api.PUT('/v1/organizations/{org_slug}/addons/{addon}/drills/check', {
          ...path(ctx, command, name),
          body: { query: o.clear ? null : query! },
        }),
      );
      ctx.out.result(a, () => [
        a.drill_check_query ? `Restore drills of ${name} now run: ${a.drill_check_query}` : `Restore drills of ${name} run no check query`,
      ]);
    });
}
