import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { detachedVolumeCommands } from './volumes-detached.js';

/** `slipway volumes …`: the application's persistent volumes in --env (issue 31; docs/volumes.md). */
export function volumeCommands(program: Command) {
  const volumes = program.command('volumes').description("The application's persistent volumes: disks of a fixed size mounted at a path");

  type Volume = {
    name: string;
    environment: string | null;
    mount_path: string;
    process_type: string;
    size_mib: number;
    usage: { used_bytes: number; size_bytes: number } | null;
  };
  const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  const usage = (v: Volume) => (v.usage ? `${mib(v.usage.used_bytes)} of ${mib(v.usage.size_bytes)}` : 'not mounted here');
  const describe = (v: Volume) =>
    `${v.name}: ${v.size_mib} MiB at ${v.mount_path} in ${v.process_type} (${v.environment ?? 'no environment'}), ${usage(v)}`;
  const deploying = (id: string | null) =>
    id
      ? `  the current release is being redeployed stop-then-start (deployment ${id}): the instance stops, then starts with the change`
      : '  (nothing serves there yet: the next deploy mounts it)';
  const sizeOf = (text: string) => {
    const m = /^(\d+)\s*(M|MB|MiB|G|GB|GiB)?$/i.exec(text.trim());
    if (!m) throw new CliError(`size '${text}' is not a size such as 512M or 2G`, EXIT.usage);
    return Number(m[1]) * (/^g/i.test(m[2] ?? 'M') ? 1024 : 1);
  };

  volumes
    .command('list', { isDefault: true })
    .description('Volumes of the application (--app) in --env, with their usage')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const list = await ok(
        ctx.api.GET('/v1/applications/{application_id}/volumes', {
          params: { path: { application_id: app.id }, query: { environment: ctx.envName() } },
        }),
      );
      ctx.out.table(
        list,
        [
          { header: 'NAME', value: (v) => v.name },
          { header: 'PATH', value: (v) => v.mount_path },
          { header: 'PROCESS', value: (v) => v.process_type },
          { header: 'SIZE', value: (v) => `${v.size_mib} MiB` },
          { header: 'USED', value: (v) => usage(v) },
        ],
        'no volumes: `slipway volumes create <name> --path /data --size 1G`',
      );
    });
  volumes
    .command('create')
    .description('Create a volume mounted at --path in one process type; the current release redeploys stop-then-start')
    .argument('<name>')
    .requiredOption('--path <path>', 'where the instance sees it, e.g. /data')
    .requiredOption('--size <size>', 'e.g. 512M or 2G')
    .option('--process <type>', 'the process type that mounts it (web)')
    .action(async (name: string, o: { path: string; size: string; process?: string }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.POST('/v1/applications/{application_id}/volumes', {
          params: { path: { application_id: app.id } },
          body: {
            name,
            mount_path: o.path,
            size_mib: sizeOf(o.size),
            environment: ctx.envName(),
            ...(o.process ? { process_type: o.process } : {}),
          },
        }),
      );
      ctx.out.result(r, () => [describe(r.volume), deploying(r.deployment_id)]);
    });
  volumes
    .command('resize')
    .description('Grow a volume (volumes never shrink); the current release redeploys stop-then-start')
    .argument('<name>')
    .requiredOption('--size <size>', 'the new size, e.g. 2G')
    .action(async (name: string, o: { size: string }, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.PATCH('/v1/applications/{application_id}/volumes/{volume}', {
          params: { path: { application_id: app.id, volume: name }, query: { environment: ctx.envName() } },
          body: { size_mib: sizeOf(o.size) },
        }),
      );
      ctx.out.result(r, () => [describe(r.volume), deploying(r.deployment_id)]);
    });
  volumes
    .command('delete')
    .description('Delete a volume and its data (needs --confirm <name>)')
    .argument('<name>')
    .option('--confirm <name>', 'the volume name again: its data cannot be brought back')
    .action(async (name: string, o: { confirm?: string }, command: Command) => {
      const ctx = Context.of(command);
      if (o.confirm !== name) throw new CliError(`deleting volume '${name}' removes its data: repeat with --confirm ${name}`, EXIT.usage);
      const app = await ctx.app();
      const r = await ok(
        ctx.api.DELETE('/v1/applications/{application_id}/volumes/{volume}', {
          params: { path: { application_id: app.id, volume: name }, query: { environment: ctx.envName() } },
        }),
      );
      ctx.out.result(r, () => [`deleted ${r.volume.name} and its data`, deploying(r.deployment_id)]);
    });
  detachedVolumeCommands(volumes);
}
