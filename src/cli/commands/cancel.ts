import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';

/**
 * `slipway deployments cancel ID` (also `slipway deploy cancel ID`): a queued deployment leaves
 * the queue, a running one stops and the previous release keeps serving. Registered after
 * `deploy` and `deployments` exist.
 */
export function cancelCommands(program: Command) {
  for (const parent of ['deployments', 'deploy']) {
    const command = program.commands.find((c) => c.name() === parent);
    command
      ?.command('cancel')
      .description('Cancel a deployment: queued, it leaves the queue; running, it stops and the previous release keeps serving')
      .argument('<id>', 'the deployment (`slipway deployments list`)')
      .action(async (id: string, _o, cmd: Command) => {
        const ctx = Context.of(cmd);
        ctx.requireKey();
        const d = await ok(ctx.api.POST('/v1/deployments/{deployment_id}/cancel', { params: { path: { deployment_id: id } } }));
        ctx.out.result(d, () =>
          d.status === 'error'
            ? `Cancelled deployment ${d.id} (release v${d.release.version}): ${d.error_detail ?? 'cancelled'}`
            : `Stopping deployment ${d.id} (release v${d.release.version}); the previous release keeps serving`,
        );
      });
  }
}
