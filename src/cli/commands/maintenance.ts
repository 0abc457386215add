import { Command, Option } from 'commander';
import { apiError, fetchOrExplain, USER_AGENT } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';

interface MaintenanceState {
  environment: string;
  enabled: boolean;
  message: string | null;
  retry_after: number | null;
  enabled_by: string | null;
  enabled_at: string | null;
}

/**
 * The environment's maintenance route. Called without the typed client until the client types
 * (src/cli/api-types.ts, generated) are regenerated with it; the answer is the same `{status, message}`.
 */
async function maintenanceCall(ctx: Context, method: 'GET' | 'PUT', body?: object): Promise<MaintenanceState> {
  const app = await ctx.app();
  const path = [app.organization_slug, app.project_slug, ctx.envName()].map(encodeURIComponent);
  const server = ctx.settings.server.replace(/\/+$/, '');
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, 'x-api-key': ctx.settings.apiKey ?? '' };
  if (body) headers['content-type'] = 'application/json';
  const response = await fetchOrExplain(server, `${server}/v1/workspaces/${path[0]}/projects/${path[1]}/envs/${path[2]}/maintenance`, {
    method,
    headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  const parsed: unknown = await response.json().catch(() => null);
  if (!response.ok) throw apiError(response.status, parsed);
  return parsed as MaintenanceState;
}

function describe(state: MaintenanceState): string[] {
  if (!state.enabled) return [`Maintenance is off in ${state.environment}: the edge serves the applications`];
  return [
    `Maintenance is on in ${state.environment}: every request gets 503 (Retry-After ${state.retry_after} s)` +
      (state.enabled_by ? `, turned on by ${state.enabled_by}` : ''),
    ...(state.message ? [`Message: ${state.message}`] : []),
  ];
}

/** `slipway maintenance [on|off]`: the environment's maintenance mode (the project of --app; --env, default production). */
export function maintenanceCommands(program: Command) {
  program
    .command('maintenance')
    .description("Maintenance mode of the application's environment: while on, the edge answers every request with a 503 page")
    .argument('[state]', 'on | off (none: show it)')
    .option('--message <text>', 'text of the page (default: a short one naming the application)')
    .addOption(new Option('--retry-after <seconds>', 'seconds sent in Retry-After (default 300)').argParser(Number))
    .action(async (state: string | undefined, opts: { message?: string; retryAfter?: number }, command: Command) => {
      const ctx = Context.of(command);
      if (state !== undefined && state !== 'on' && state !== 'off') throw usage(`Unknown state '${state}': on or off`);
      if (opts.retryAfter !== undefined && !Number.isInteger(opts.retryAfter)) throw usage('--retry-after takes whole seconds');
      const result =
        state === undefined
          ? await maintenanceCall(ctx, 'GET')
          : await maintenanceCall(ctx, 'PUT', {
              enabled: state === 'on',
              ...(state === 'on' && opts.message !== undefined ? { message: opts.message } : {}),
              ...(state === 'on' && opts.retryAfter !== undefined ? { retry_after: opts.retryAfter } : {}),
            });
      ctx.out.result(result, () => describe(result));
    });
}
