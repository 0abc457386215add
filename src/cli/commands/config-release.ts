import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { sleep } from '../follow.js';

/**
 * `slipway config release`: after `config set` of runtime variables, puts the configuration live
 * as a new release on the image already built, with no build (a build-time variable needs
 * `slipway deploy`). Registered after `config` exists.
 */
export function configReleaseCommands(program: Command) {
  program.commands
    .find((c) => c.name() === 'config')
    ?.command('release')
    .description('Release the current configuration on the image already built and deploy it, without a build')
    .option('-w, --wait', 'wait until the new release serves; exit 1 with the reason when the deploy fails')
    .action(async (opts: { wait?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const accepted = await ok(
        ctx.api.POST('/v1/applications/{application_id}/config-release', { params: { path: { application_id: app.id } } }),
      );
      const started = `Release v${accepted.version} of ${app.slug} with the current configuration, on the built image (no build)`;
      if (!opts.wait) return ctx.out.result(accepted, () => `${started}: deploying (deployment ${accepted.deployment_id})`);
      const detail = () =>
        ok(ctx.api.GET('/v1/deployments/{deployment_id}/detail', { params: { path: { deployment_id: accepted.deployment_id } } }));
      let d = await detail();
      while (!d.complete && !d.error) {
        await sleep(200);
        d = await detail();
      }
      if (d.error) throw new CliError(`Deploy of release v${accepted.version} failed: ${d.error_detail ?? 'see its log'}`, EXIT.failure);
      const url = typeof d.deploy_metadata?.url === 'string' ? d.deploy_metadata.url : null;
      ctx.out.result({ ...accepted, url }, () => `${started}: serving${url ? ` at ${url}` : ''}`);
    });
}
