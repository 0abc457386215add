import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { CliError, usage } from '../errors.js';
import { checkLocalSource } from '../local-source.js';
import { findLink, readSettings, updateSettings } from '../settings.js';
import { appPath, deployedUrl, followEnvDeploy, PHASES } from './deploy.js';

interface LaunchOptions {
  project?: string;
  name?: string;
  deploy?: boolean;
  includeUncommitted?: boolean;
}

/**
 * `slipway launch`: the application in this directory, in one step (as `fly launch`): what it
 * is and how it starts, an application of that name in the project (the only one, or
 * --project) built from this repository's branch, linked here, then deployed and followed.
 */
export function launchCommand(program: Command) {
  program
    .command('launch')
    .alias('init')
    .description('Detect the application in this directory, create it, link it here and deploy it, in one step')
    .option('--name <name>', 'its name (default: the directory name)')
    .option('--project <org/project>', 'where to create it (default: your only project)')
    .option('--no-deploy', 'create and link it, deploy later')
    .option('--include-uncommitted', 'deploy changes not committed yet too')
    .action(async (o: LaunchOptions, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const dir = ctx.cwd;
      const linked = findLink(readSettings(ctx.settingsFile), dir);
      if (linked) throw new CliError(`This directory is already linked to ${linked.name}: deploy it with slipway deploy --wait`);
      const git = (args: string[]) => spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
      if (git(['rev-parse', '--verify', '--quiet', 'HEAD']).status !== 0)
        throw new CliError(
          `${dir} is not a git repository with a commit, and a deploy builds a commit: git init -b main && git add -A && git commit -m "First deploy", then slipway launch`,
        );
      const branch = git(['rev-parse', '--abbrev-ref', 'HEAD']).stdout.trim();
      const detected = detect(dir);
      if (!detected)
        throw new CliError(
          "Nothing here says how to start the application: add a Procfile (printf 'web: node server.js\\n' > Procfile), a package.json with scripts.start, or a Dockerfile; then commit it and run slipway launch",
        );
      const project = await chooseProject(ctx, o.project);
      const name = o.name ?? basename(dir);
      ctx.out.note(
        `Detected ${detected}. Creating ${name} in ${project.organization_slug}/${project.slug}, built from ${dir} (branch ${branch}).`,
      );

      const created = await ok(ctx.api.POST('/v1/applications', { body: { name, project_id: project.id } }));
      const app = await ok(
        ctx.api.PATCH('/v1/applications/{application_id}/settings', {
          params: { path: { application_id: created.id } },
          body: { github_repository: dir, auto_deploy_branch: branch },
        }),
      );
      updateSettings((s) => {
        s.links = { ...s.links, [dir]: { application_id: app.id, name: appPath(app) } };
      }, ctx.settingsFile);
      ctx.out.note(`Created ${appPath(app)} and linked ${dir} to it.`);
      if (o.deploy === false) return ctx.out.result(app, () => `Deploy it with: slipway deploy --wait`);

      const { ref } = checkLocalSource(app, { includeUncommitted: o.includeUncommitted, warn: (text) => ctx.out.stderr.write(text) });
      const env = ctx.envName();
      const record = await ok(
        ctx.api.POST('/v1/workspaces/{workspace}/projects/{project}/envs/{env}/deploy', {
          params: {
            path: { workspace: app.organization_slug, project: app.project_slug, env },
            query: { service: app.slug, ...(ref ? { ref } : {}) },
          },
        }),
      );
      const final = await followEnvDeploy(ctx, app, env, record, PHASES);
      const url = await deployedUrl(ctx, final);
      ctx.out.result({ ...final, url }, () =>
        ctx.out.colors.green(`Launched ${appPath(app)}${url ? `: ${url}` : ''}. Next: slipway logs --follow, slipway open, slipway status`),
      );
    });
}

/** What kind of application this is and how it starts, or null when nothing says. */
function detect(dir: string): string | null {
  const procfile = existsSync(join(dir, 'Procfile')) ? readFileSync(join(dir, 'Procfile'), 'utf8') : '';
  const web = /^web:\s*(.+)$/m.exec(procfile)?.[1]?.trim();
  const isNode = existsSync(join(dir, 'package.json'));
  const kind = existsSync(join(dir, 'Dockerfile')) ? 'a Dockerfile' : isNode ? 'a Node.js application' : 'an application';
  if (web) return `${kind} (web: ${web})`;
  if (isNode) {
    try {
      const start = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: { start?: string } }).scripts?.start;
      if (start) return `${kind} (npm start: ${start})`;
    } catch {
      throw new CliError('package.json is not valid JSON: fix it, then slipway launch');
    }
  }
  return kind === 'a Dockerfile' ? kind : null;
}

async function chooseProject(ctx: Context, wanted: string | undefined) {
  const projects = await ok(ctx.api.GET('/v1/projects'));
  if (wanted) {
    const found = projects.find((p) => `${p.organization_slug}/${p.slug}` === wanted);
    if (!found)
      throw usage(`No project ${wanted} among yours (${projects.map((p) => `${p.organization_slug}/${p.slug}`).join(', ') || 'none'})`);
    return found;
  }
  if (projects.length === 1) return projects[0]!;
  if (projects.length === 0)
    throw new CliError(
      'You have no project to create it in: slipway orgs create Acme && slipway projects create Shop --org acme, then slipway launch',
    );
  throw usage(
    `Which project? slipway launch --project <org/project> (yours: ${projects.map((p) => `${p.organization_slug}/${p.slug}`).join(', ')})`,
  );
}
