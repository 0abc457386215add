import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';

interface AlertRule {
  id: string;
  name: string;
  metric: string;
  threshold: number;
  window_seconds: number;
  for_seconds: number;
  application: string | null;
  environment: string | null;
  state: string;
  value: number | null;
  silenced_until: string | null;
}
interface Transition {
  from: string;
  to: string;
  value: number | null;
  notified: boolean;
  at: string;
}
interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}
type Call = <T>(path: string, init: { params: { path: Record<string, string> }; body?: unknown }) => Promise<Result<T>>;
/** The alert routes are newer than the generated client types: called by path until `npm run client:types` includes them. */
interface Untyped {
  GET: Call;
  POST: Call;
  PUT: Call;
  DELETE: Call;
}

/** `1h`, `30m`, `90s`, `2d` → seconds. */
export function durationSeconds(text: string): number {
  const m = /^(\d+)\s*([smhd])$/.exec(text.trim());
  if (!m) throw usage(`'${text}' is not a duration: a number and s, m, h or d (e.g. 1h)`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

/** `slipway alerts …`: an organization's alert rules (issue 33). */
export function alertCommands(program: Command) {
  const orgOf = (ctx: Context, o: { org?: string }) => {
    ctx.requireKey();
    return o.org ?? ctx.appName().split('/')[0]!;
  };
  const api = (ctx: Context) => ctx.api as unknown as Untyped;
  const BASE = '/v1/organizations/{org_slug}/alert-rules';
  const RULE = `${BASE}/{rule}`;
  const rulePath = (org: string, rule: string) => ({ params: { path: { org_slug: org, rule } } });
  const describe = (r: AlertRule) =>
    `${r.name}: ${r.metric} > ${r.threshold} over ${r.window_seconds}s${r.for_seconds ? ` for ${r.for_seconds}s` : ''} — ${r.state}` +
    (r.silenced_until ? ` (silenced until ${r.silenced_until})` : '');

  const alerts = program
    .command('alerts')
    .description("The organization's alert rules: thresholds over error rate, latency, restarts (admins)");
  alerts
    .command('list', { isDefault: true })
    .description('Rules and their states')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const rules = await ok(api(ctx).GET<AlertRule[]>(BASE, { params: { path: { org_slug: orgOf(ctx, o) } } }));
      ctx.out.table(
        rules,
        [
          { header: 'NAME', value: (r) => r.name },
          { header: 'METRIC', value: (r) => `${r.metric} > ${r.threshold}` },
          { header: 'WINDOW', value: (r) => `${r.window_seconds}s` },
          {
            header: 'SCOPE',
            value: (r) => (r.application ? `${r.application}${r.environment ? `/${r.environment}` : ''}` : 'organization'),
          },
          { header: 'STATE', value: (r) => r.state },
          { header: 'VALUE', value: (r) => (r.value === null ? '-' : String(r.value)) },
          { header: 'SILENCED', value: (r) => (r.silenced_until ? when(r.silenced_until) : '') },
        ],
        'no rules: `slipway alerts add errors --metric error_rate --threshold 0.05 --window 5m`',
      );
    });
  alerts
    .command('add')
    .description('Add a rule: the metric above the threshold over the window, for a while, fires')
    .argument('<name>')
    .requiredOption('--metric <metric>', 'error_rate | p95_latency_ms | restarts | memory_percent | log_matches')
    .requiredOption('--threshold <number>', 'fires above this (error_rate: a share, 0.05 = 5%)')
    .option('--window <duration>', 'the window the metric is over (default 5m)')
    .option('--for <duration>', 'pending this long before firing (default: fire at the next evaluation)')
    .option('--min-requests <n>', 'request metrics are judged over at least this many requests (default 20)')
    .option('--pattern <text>', 'log_matches: the plain substring a counted line holds (not a regular expression)')
    .option('--ignore-case', 'log_matches: match the pattern in any case')
    .option('--app-id <id>', 'only this application')
    .option('--environment <slug>', 'only this environment of the application')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (name: string, o: Record<string, string | undefined>, command: Command) => {
      const ctx = Context.of(command);
      const threshold = Number(o.threshold);
      if (!Number.isFinite(threshold)) throw usage(`--threshold '${o.threshold}' is not a number`);
      const rule = await ok(
        api(ctx).POST<AlertRule>(BASE, {
          params: { path: { org_slug: orgOf(ctx, o) } },
          body: {
            name,
            metric: o.metric,
            threshold,
            ...(o.window ? { window_seconds: durationSeconds(o.window) } : {}),
            ...(o.for ? { for_seconds: durationSeconds(o.for) } : {}),
            ...(o.minRequests ? { min_requests: Number(o.minRequests) } : {}),
            ...(o.pattern ? { pattern: o.pattern } : {}),
            ...(o.ignoreCase ? { ignore_case: true } : {}),
            ...(o.appId ? { application_id: o.appId } : {}),
            ...(o.environment ? { environment: o.environment } : {}),
          },
        }),
      );
      ctx.out.result(rule, () => `Added ${describe(rule)}`);
    });
  alerts
    .command('silence')
    .description('No notifications from a rule for a time (its state changes are still recorded)')
    .argument('<rule>', 'name or id')
    .requiredOption('--for <duration>', 'e.g. 1h, 30m')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (rule: string, o: { for: string; org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const silenced = await ok(
        api(ctx).PUT<AlertRule>(`${RULE}/silence`, { ...rulePath(orgOf(ctx, o), rule), body: { for_seconds: durationSeconds(o.for) } }),
      );
      ctx.out.result(silenced, () => `Silenced ${silenced.name} until ${silenced.silenced_until}`);
    });
  alerts
    .command('unsilence')
    .description('Lift a silence')
    .argument('<rule>', 'name or id')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (rule: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const r = await ok(api(ctx).DELETE<AlertRule>(`${RULE}/silence`, rulePath(orgOf(ctx, o), rule)));
      ctx.out.result(r, () => `${r.name} notifies again`);
    });
  alerts
    .command('history')
    .description("A rule's state changes, newest first")
    .argument('<rule>', 'name or id')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (rule: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const items = await ok(api(ctx).GET<Transition[]>(`${RULE}/history`, rulePath(orgOf(ctx, o), rule)));
      ctx.out.table(
        items,
        [
          { header: 'AT', value: (t) => when(t.at) },
          { header: 'FROM', value: (t) => t.from },
          { header: 'TO', value: (t) => t.to },
          { header: 'VALUE', value: (t) => (t.value === null ? '-' : String(t.value)) },
          { header: 'NOTIFIED', value: (t) => (t.notified ? 'yes' : 'no') },
        ],
        'no state changes yet',
      );
    });
  alerts
    .command('remove')
    .alias('rm')
    .description('Delete a rule and its history')
    .argument('<rule>', 'name or id')
    .option('--org <slug>', 'organization (default: the linked application’s)')
    .action(async (rule: string, o: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      const r = await ok(api(ctx).DELETE<{ ok: boolean }>(RULE, rulePath(orgOf(ctx, o), rule)));
      ctx.out.result(r, () => `Removed ${rule}`);
    });
}
