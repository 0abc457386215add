import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';

/**
 * `slipway volumes detached | attach-detached | delete-detached`: the organization's volumes whose
 * application or environment was deleted (issue 31; docs/volumes.md). Their data stays and counts in
 * the disk quota until an admin re-attaches them to another application or deletes them.
 */
export function detachedVolumeCommands(volumes: Command) {
  /** --org, else the organization part of --app / the linked application (no request needed). */
  const orgOf = (ctx: Context, command: Command): string =>
    (command.optsWithGlobals() as { org?: string }).org ?? ctx.appName().split('/')[0]!;
  const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

  volumes
    .command('detached')
    .description("The organization's volumes whose application or environment was deleted (kept, counted in the disk quota)")
    .option('--org <slug>', 'the organization (default: that of --app / the linked application)')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(
        ctx.api.GET('/v1/organizations/{org_slug}/volumes/detached', { params: { path: { org_slug: orgOf(ctx, command) } } }),
      );
      ctx.out.table(
        list,
        [
          { header: 'ID', value: (v) => v.id },
          { header: 'NAME', value: (v) => v.name },
          { header: 'PATH', value: (v) => v.mount_path },
          { header: 'PROCESS', value: (v) => v.process_type },
          { header: 'SIZE', value: (v) => `${v.size_mib} MiB` },
          { header: 'USED', value: (v) => (v.usage ? mib(v.usage.used_bytes) : '-') },
        ],
        'no detached volumes',
      );
    });

  volumes
    .command('attach-detached')
    .description('Mount a detached volume in the application (--app, in --env); its files become that application’s')
    .argument('<id>', 'the volume id (`slipway volumes detached`)')
    .option('--org <slug>', 'the organization holding the volume (default: that of --app)')
    .option('--name <name>', 'its name there (default: its name before)')
    .option('--path <path>', 'where the instance sees it (default: where it was mounted before)')
    .option('--process <type>', 'the process type that mounts it (default: the one before)')
    .action(async (id: string, o: { name?: string; path?: string; process?: string }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.POST('/v1/organizations/{org_slug}/volumes/detached/{volume_id}/attach', {
          params: { path: { org_slug: orgOf(ctx, command), volume_id: id } },
          body: {
            application_id: app.id,
            environment: ctx.envName(),
            ...(o.name ? { name: o.name } : {}),
            ...(o.path ? { mount_path: o.path } : {}),
            ...(o.process ? { process_type: o.process } : {}),
          },
        }),
      );
      ctx.out.result(r, () => [
        `attached ${r.volume.name} to ${ctx.appName()} (${r.volume.environment ?? 'no environment'}) at ${r.volume.mount_path} in ${r.volume.process_type}`,
        r.deployment_id
          ? `  the current release is being redeployed stop-then-start (deployment ${r.deployment_id})`
          : '  (nothing serves there yet: the next deploy mounts it)',
      ]);
    });

  volumes
    .command('delete-detached')
    .description('Delete a detached volume and its data (needs --confirm <id>)')
    .argument('<id>', 'the volume id (`slipway volumes detached`)')
    .option('--org <slug>', 'the organization (default: that of --app / the linked application)')
    .option('--confirm <id>', 'the volume id again: its data cannot be brought back')
    .action(async (id: string, o: { confirm?: string }, command: Command) => {
      const ctx = Context.of(command);
      if (o.confirm !== id) throw new CliError(`deleting volume ${id} removes its data: repeat with --confirm ${id}`, EXIT.usage);
      ctx.requireKey();
      const r = await ok(
        ctx.api.DELETE('/v1/organizations/{org_slug}/volumes/detached/{volume_id}', {
          params: { path: { org_slug: orgOf(ctx, command), volume_id: id } },
        }),
      );
      ctx.out.result(r, () => [`deleted ${r.name} and its data`]);
    });
}
