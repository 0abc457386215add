import { input } from '@inquirer/prompts';
import type { Command } from 'commander';
import { ok, type Paths } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { positiveInt } from './auth.js';
import { appPath } from './deploy.js';

type SettingsBody = NonNullable<Paths['/v1/applications/{application_id}/settings']['patch']['requestBody']>['content']['application/json'];

interface UpdateOptions {
  name?: string;
  healthCheckPath?: string;
  healthCheckHost?: string;
  deploymentTimeout?: number;
  healthCheckTimeout?: number | 'default';
  stabilityWindow?: number | 'default';
  repo?: string;
  branch?: string;
  subdirectory?: string;
  private?: boolean;
  githubEnvironment?: string;
  startCommand?: string;
}

/** Seconds, or `default` for the platform's own (sent as null; commander would turn a parsed null into ''). */
function secondsOrDefault(value: string, name: string, minimum: number): number | 'default' {
  if (value === 'default') return value;
  const n = Number(value);
  if (!Number.isInteger(n) || n < minimum) throw usage(`${name} must be a whole number of seconds (at least ${minimum}) or \`default\``);
  return n;
}

/** `none` clears a setting that may be empty. */
const orNull = (value: string) => (value === 'none' ? null : value);

/** `apps update` (every setting of `PATCH /applications/{id}/settings`), `apps rename` and `apps delete`, on the `apps` group. */
export function appsSettingsCommands(program: Command) {
  const apps = program.commands.find((c) => c.name() === 'apps');
  if (!apps) throw new Error('the apps command group is registered first');

  apps
    .command('update')
    .description("Change an application's settings (default: the linked one); prints them all")
    .argument('[org/project/app]')
    .option('--name <name>', 'display name (its slug, in paths and host names, stays)')
    .option('--health-check-path <path>', 'what a new web instance must answer 2xx on before it gets traffic, e.g. /healthz')
    .option('--health-check-host <host>', "Host header of the health check (`none`: the app's own host name)")
    .option('--deployment-timeout <seconds>', 'how long a deployment may take to become healthy (5-3600)', (v) =>
      positiveInt(v, '--deployment-timeout'),
    )
    .option('--health-check-timeout <seconds>', 'how long a new web instance may take to answer (1-3600; `default`: the platform’s)', (v) =>
      secondsOrDefault(v, '--health-check-timeout', 1),
    )
    .option(
      '--stability-window <seconds>',
      'how long new instances must keep running once healthy before traffic switches (0-600, 0: none; `default`: the platform’s)',
      (v) => secondsOrDefault(v, '--stability-window', 0),
    )
    .option('--repo <repository>', 'git repository: owner/repo, a git URL or a local path')
    .option('--branch <branch>', 'branch `slipway deploy` builds and pushes deploy (`none`: no automatic deploys)')
    .option('--subdirectory <path>', 'the application inside the repository (`none`: its root)')
    .option('--private', 'the repository needs the GitHub App to be read')
    .option('--no-private', 'the repository is public')
    .option('--github-environment <name>', 'GitHub deployment environment to report to (`none`: the default)')
    .option(
      '--start-command <command>',
      "the web process's command, instead of the image's or Procfile's (`none`: theirs); live with the next release: slipway config release",
    )
    .addHelpText(
      'after',
      '\nExamples:\n  slipway apps update --health-check-path /healthz --deployment-timeout 60\n  slipway apps update acme/shop/web --branch release',
    )
    .action(async (path: string | undefined, o: UpdateOptions, command: Command) => {
      const ctx = Context.of(command);
      if (path) ctx.options.app = path;
      const body: SettingsBody = {
        ...(o.name !== undefined ? { name: o.name } : {}),
        ...(o.healthCheckPath !== undefined ? { health_check_path: o.healthCheckPath } : {}),
        ...(o.healthCheckHost !== undefined ? { health_check_host: orNull(o.healthCheckHost) } : {}),
        ...(o.deploymentTimeout !== undefined ? { deployment_timeout: o.deploymentTimeout } : {}),
        ...(o.healthCheckTimeout !== undefined
          ? { health_check_timeout: o.healthCheckTimeout === 'default' ? null : o.healthCheckTimeout }
          : {}),
        ...(o.stabilityWindow !== undefined ? { stability_window: o.stabilityWindow === 'default' ? null : o.stabilityWindow } : {}),
        ...(o.repo !== undefined ? { github_repository: orNull(o.repo) } : {}),
        ...(o.branch !== undefined ? { auto_deploy_branch: orNull(o.branch) } : {}),
        ...(o.subdirectory !== undefined ? { subdirectory: orNull(o.subdirectory) } : {}),
        ...(o.private !== undefined ? { github_repository_is_private: o.private } : {}),
        ...(o.githubEnvironment !== undefined ? { github_environment_name: orNull(o.githubEnvironment) } : {}),
        ...(o.startCommand !== undefined ? { start_command: orNull(o.startCommand) } : {}),
      };
      if (Object.keys(body).length === 0)
        throw usage('Nothing to change: name a setting, e.g. `slipway apps update --health-check-path /healthz` (see --help)');
      const app = await ctx.app();
      const updated = await ok(
        ctx.api.PATCH('/v1/applications/{application_id}/settings', { params: { path: { application_id: app.id } }, body }),
      );
      ctx.out.fields(updated, [
        ['Application', appPath(updated)],
        ['Name', updated.name],
        ['Health check', `${updated.health_check_path}${updated.health_check_host ? ` (Host: ${updated.health_check_host})` : ''}`],
        ['Deploy timeout', `${updated.deployment_timeout}s`],
        ['Health timeout', updated.health_check_timeout === null ? 'platform default' : `${updated.health_check_timeout}s`],
        ['Stability', updated.stability_window === null ? 'platform default' : `${updated.stability_window}s`],
        ['Repository', updated.github_repository],
        ['Branch', updated.auto_deploy_branch],
        ['Subdirectory', updated.subdirectory],
        ['Private repo', updated.github_repository_is_private ? 'yes' : 'no'],
        ['GitHub env', updated.github_environment_name],
        ['Start command', updated.start_command ?? "the image's (or Procfile's)"],
      ]);
      ctx.out.note('Health check, timeouts and stability window apply from the next deployment: slipway deploy --wait');
    });

  apps
    .command('rename')
    .description("Change an application's display name (its slug, in paths and host names, stays)")
    .argument('<new-name>')
    .action(async (name: string, _o, command: Command) => {
      const ctx = Context.of(command);
      const app = await ctx.app();
      const updated = await ok(
        ctx.api.PATCH('/v1/applications/{application_id}/settings', { params: { path: { application_id: app.id } }, body: { name } }),
      );
      ctx.out.result(updated, () => `Renamed ${appPath(updated)} from '${app.name}' to '${updated.name}'`);
    });

  apps
    .command('delete')
    .description('Delete an application: stops and unroutes its instances everywhere, removes its records (add-ons stay)')
    .argument('[org/project/app]')
    .option('--yes', "delete without asking for the application's slug")
    .option('--with-addons', 'also delete the add-ons attached to it (each can be undeleted during the grace period)')
    .action(async (path: string | undefined, o: { yes?: boolean; withAddons?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      if (path) ctx.options.app = path;
      const app = await ctx.app();
      if (!o.yes) {
        // A script gets a usage error instead of a prompt it cannot answer.
        if (!process.stdin.isTTY) throw usage('Not a terminal: pass --yes to delete without confirmation');
        const typed = await input({
          message: `This deletes ${appPath(app)} and everything it runs${o.withAddons ? ', with its add-ons' : ''}. Type its slug (${app.slug}) to confirm:`,
        });
        if (typed.trim() !== app.slug) throw usage(`'${typed.trim()}' is not ${app.slug}: nothing was deleted`);
      }
      await ok(
        ctx.api.DELETE('/v1/applications/{application_id}', {
          params: { path: { application_id: app.id }, ...(o.withAddons ? { query: { with_addons: true } } : {}) },
        }),
      );
      ctx.out.result({ deleted: app.id }, () =>
        o.withAddons
          ? `Deleted ${appPath(app)} and its add-ons (\`slipway addons undelete NAME\` brings one back during the grace period)`
          : `Deleted ${appPath(app)} (its add-ons, if any, stay in the organization)`,
      );
    });
}
