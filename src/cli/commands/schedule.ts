import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { when } from '../output.js';
import { positiveInt } from './auth.js';
import { shellJoin } from './run.js';

/** `slipway cron …` and `slipway autoscale …`: scheduled jobs and autoscaling (issue 17). */
export function scheduleCommands(program: Command) {
  const envQuery = (ctx: Context) => (ctx.options.env ? { environment: ctx.options.env } : {});

  const cron = program.command('cron').description("The application's scheduled jobs (cron entries, UTC)");
  cron
    .command('list', { isDefault: true })
    .description('Entries with their next run')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const entries = await ok(
        ctx.api.GET('/v1/applications/{application_id}/cron', { params: { path: { application_id: app.id }, query: envQuery(ctx) } }),
      );
      ctx.out.table(
        entries,
        [
          { header: 'NAME', value: (e) => e.name },
          { header: 'SCHEDULE', value: (e) => e.schedule },
          { header: 'COMMAND', value: (e) => e.command },
          { header: 'FROM', value: (e) => e.source },
          { header: 'NEXT RUN', value: (e) => when(e.next_run_at) },
        ],
        'no scheduled jobs: `slipway cron set <name> "<schedule>" -- <command>`',
      );
    });
  cron
    .command('set')
    .description('Create or replace an entry: the command runs as a one-off run of the serving release')
    .argument('<name>')
    .argument('<schedule>', 'e.g. "*/15 * * * *" or @daily')
    .argument('<command...>', 'after `--`: the command and its arguments')
    .option('-p, --process <type>', 'process type whose settings it runs with')
    .option('--timeout <seconds>', 'stop a run after this long', (v) => positiveInt(v, '--timeout'))
    .action(async (name: string, schedule: string, words: string[], o: { process?: string; timeout?: number }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const entry = await ok(
        ctx.api.PUT('/v1/applications/{application_id}/cron/{name}', {
          params: { path: { application_id: app.id, name }, query: envQuery(ctx) },
          body: {
            schedule,
            command: shellJoin(words),
            ...(o.process ? { process_type: o.process } : {}),
            ...(o.timeout ? { timeout_seconds: o.timeout } : {}),
          },
        }),
      );
      ctx.out.result(entry, () => `Scheduled ${entry.name} (${entry.schedule}); next run ${when(entry.next_run_at)}`);
    });
  cron
    .command('rm')
    .description('Remove an entry (its past runs stay)')
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.DELETE('/v1/applications/{application_id}/cron/{name}', {
          params: { path: { application_id: app.id, name }, query: envQuery(ctx) },
        }),
      );
      ctx.out.result(r, () => `Removed ${name}`);
    });
  cron
    .command('runs')
    .description("An entry's runs, newest first (`slipway runs log <id>`-style detail: GET /runs/{id}/log)")
    .argument('<name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const page = await ok(
        ctx.api.GET('/v1/applications/{application_id}/cron/{name}/runs', {
          params: { path: { application_id: app.id, name }, query: envQuery(ctx) },
        }),
      );
      ctx.out.table(
        page.items,
        [
          { header: 'SCHEDULED FOR', value: (r) => when(r.scheduled_for) },
          { header: 'STATUS', value: (r) => ctx.out.status(r.status) },
          { header: 'EXIT', value: (r) => r.exit_code ?? '' },
          { header: 'ID', value: (r) => r.id },
        ],
        'no runs yet',
      );
    });

  const autoscale = program.command('autoscale').description('Autoscaling of process types between min and max instances');
  autoscale
    .command('list', { isDefault: true })
    .description('Policies per process type')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const policies = await ok(
        ctx.api.GET('/v1/applications/{application_id}/autoscaling', {
          params: { path: { application_id: app.id }, query: envQuery(ctx) },
        }),
      );
      ctx.out.table(
        policies,
        [
          { header: 'PROCESS', value: (p) => p.process_type },
          { header: 'MIN', value: (p) => p.min },
          { header: 'MAX', value: (p) => p.max },
          { header: 'TARGET', value: (p) => targetText(p.target) },
          { header: 'COOLDOWN', value: (p) => `${p.cooldown_seconds}s` },
          { header: 'LAST CHANGE', value: (p) => when(p.last_scaled_at) },
        ],
        'no autoscaling: `slipway autoscale set web --min 1 --max 5 --cpu 70`',
      );
    });
  autoscale
    .command('set')
    .description('Autoscale a process type towards a CPU or requests-per-second target')
    .argument('<process>', 'process type (web, worker, …)')
    .requiredOption('--min <n>', 'fewest instances', (v) => positiveInt(v, '--min'))
    .requiredOption('--max <n>', 'most instances', (v) => positiveInt(v, '--max'))
    .option('--cpu <percent>', "target CPU per instance, % of the pod class's request", (v) => positiveInt(v, '--cpu'))
    .option('--rps <n>', 'target requests per second per instance (web)', (v) => positiveNumber(v, '--rps'))
    .option('--cooldown <seconds>', 'least time after a change before scaling down (default 300)', (v) => positiveInt(v, '--cooldown'))
    .action(async (type: string, o: { min: number; max: number; cpu?: number; rps?: number; cooldown?: number }, command: Command) => {
      if ((o.cpu === undefined) === (o.rps === undefined)) throw new CliError('Give one target: --cpu <percent> or --rps <n>', EXIT.usage);
      const ctx = Context.of(command);
      const app = await ctx.app();
      const policy = await ok(
        ctx.api.PUT('/v1/applications/{application_id}/autoscaling/{process_type}', {
          params: { path: { application_id: app.id, process_type: type }, query: envQuery(ctx) },
          body: {
            min: o.min,
            max: o.max,
            target: o.cpu !== undefined ? { cpu_percent: o.cpu } : { requests_per_second: o.rps! },
            ...(o.cooldown !== undefined ? { cooldown_seconds: o.cooldown } : {}),
          },
        }),
      );
      ctx.out.result(policy, () => `Autoscaling ${type} between ${policy.min} and ${policy.max} at ${targetText(policy.target)}`);
    });
  autoscale
    .command('rm')
    .description('Stop autoscaling a process type (its count stays)')
    .argument('<process>')
    .action(async (type: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.DELETE('/v1/applications/{application_id}/autoscaling/{process_type}', {
          params: { path: { application_id: app.id, process_type: type }, query: envQuery(ctx) },
        }),
      );
      ctx.out.result(r, () => `Stopped autoscaling ${type}`);
    });
  autoscale
    .command('events')
    .description('Changes the autoscaler made, newest first, with the reason')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const page = await ok(
        ctx.api.GET('/v1/applications/{application_id}/scale-events', {
          params: { path: { application_id: app.id }, query: envQuery(ctx) },
        }),
      );
      ctx.out.table(
        page.items,
        [
          { header: 'WHEN', value: (e) => when(e.created_at) },
          { header: 'PROCESS', value: (e) => e.process_type },
          { header: 'CHANGE', value: (e) => `${e.from} → ${e.to}` },
          { header: 'REASON', value: (e) => e.reason },
        ],
        'no changes yet',
      );
    });
}

function targetText(target: { cpu_percent: number } | { requests_per_second: number }): string {
  return 'cpu_percent' in target ? `${target.cpu_percent}% CPU` : `${target.requests_per_second} requests/s`;
}

function positiveNumber(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new CliError(`${flag} must be a positive number`, EXIT.usage);
  return n;
}
