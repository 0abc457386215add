import type { Command } from 'commander';
import { ok, type Paths } from '../api.js';
import { Context } from '../context.js';
import { terminalSafe, when } from '../output.js';

type Deployment = Paths['/v1/deployments/{deployment_id}/detail']['get']['responses']['200']['content']['application/json'];
export type DeploymentFailure = NonNullable<Deployment['failure']>;

/** `slipway ps` (alias `instances`): every instance of the environment with its state, restarts and last exit. */
export function psCommands(program: Command) {
  program
    .command('ps')
    .alias('instances')
    .description("The application's instances: state, restarts, why each last exited (production, or --env)")
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const env = ctx.envName();
      const instances = await ok(
        ctx.api.GET('/v1/applications/{application_id}/instances', {
          params: { path: { application_id: app.id }, query: { environment: env } },
        }),
      );
      ctx.out.table(
        instances,
        [
          { header: 'NAME', value: (i) => i.name },
          { header: 'STATE', value: (i) => ctx.out.status(i.state) },
          { header: 'RESTARTS', value: (i) => String(i.restarts) },
          { header: 'LAST EXIT', value: (i) => i.last_exit },
          { header: 'RELEASE', value: (i) => (i.release_version === null ? null : `v${i.release_version}`) },
          { header: 'STARTED', value: (i) => when(i.started_at) },
        ],
        `no instances run in ${env}: \`slipway deploy\`, or \`slipway scale web=1\``,
      );
    });
}

/**
 * Why a deployment's new instances failed, for people: what ended the process or what the health
 * check got and on which port, what it listens on, its last lines (unless already shown) and the hint.
 */
export function failureLines(f: DeploymentFailure, options: { output: boolean }): string[] {
  const safe = terminalSafe;
  const lines: string[] = [];
  const when = {
    crashed_during_start: 'crashed during start',
    crashed_in_stability_window: `crashed ${f.seconds_after_healthy ?? '?'}s after it answered healthy (stability window)`,
    health_check_timeout: 'never answered its health check',
  }[f.reason];
  lines.push(`${safe(f.instance)} ${when}`);
  if (f.exit) lines.push(`  exit:         ${safe(f.exit.description)}`);
  if (f.health_check)
    lines.push(`  health check: GET ${safe(f.health_check.path)} on port ${f.health_check.port}: ${safe(f.health_check.result)}`);
  if (f.port !== null && f.reason === 'health_check_timeout') {
    const ports =
      f.listening_ports === null ? 'unknown' : f.listening_ports.length > 0 ? `port ${f.listening_ports.join(', ')}` : 'no port';
    lines.push(`  listening on: ${ports} (PORT is ${f.port}; ${safe(f.listening_checked)})`);
  }
  if (options.output && f.output.length > 0) {
    lines.push(`  last ${f.output.length} line(s) of its output:`);
    for (const line of f.output) lines.push(`    | ${safe(line)}`);
  }
  if (f.hint) lines.push(`  hint: ${safe(f.hint)}`);
  return lines;
}
