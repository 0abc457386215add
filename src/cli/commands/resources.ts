import type { Command } from 'commander';
import { ok } from '../api.js';
import { Context } from '../context.js';
import { usage } from '../errors.js';
import { when } from '../output.js';
import { updateSettings } from '../settings.js';

/** `org/project` → its two slugs. */
export function projectPath(value: string): { org: string; project: string } {
  const [org, project, extra] = value.split('/');
  if (!org || !project || extra !== undefined) throw usage(`Project '${value}' must be written org/project`);
  return { org, project };
}

/** The project from --project, else the linked application's. */
async function projectOf(ctx: Context, flag?: string) {
  if (flag) return projectPath(flag);
  const [org, project] = ctx.appName().split('/');
  if (!org || !project) throw usage('Pass --project <org/project>');
  return { org, project };
}

export function resourceCommands(program: Command) {
  const orgs = program.command('orgs').alias('workspaces').description('Organizations (workspaces)');
  orgs
    .command('list')
    .description('Your organizations')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = await ok(ctx.api.GET('/v1/organizations'));
      ctx.out.table(
        list,
        [
          { header: 'SLUG', value: (o) => o.slug },
          { header: 'NAME', value: (o) => o.name },
          { header: 'MEMBERS', value: (o) => o.member_count },
          { header: 'PROJECTS', value: (o) => o.project_count },
          { header: 'CREATED', value: (o) => when(o.created) },
        ],
        'no organizations: create one with `slipway orgs create <name>`',
      );
    });
  orgs
    .command('get')
    .description('An organization and its members')
    .argument('<org>')
    .action(async (slug: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const org = await ok(ctx.api.GET('/v1/organizations/{org_slug}', { params: { path: { org_slug: slug } } }));
      ctx.out.fields(org, [
        ['Name', org.name],
        ['Slug', org.slug],
        ['Id', org.id],
        ['Projects', org.project_count],
        ['Applications', org.application_count],
        ['Members', org.members.map((m) => `${m.username}${m.admin ? ' (admin)' : ''}`).join(', ')],
        ['Created', when(org.created)],
      ]);
    });
  orgs
    .command('create')
    .description('Create an organization (you become its admin)')
    .argument('<name>')
    .option('--slug <slug>')
    .action(async (name: string, opts: { slug?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const org = await ok(ctx.api.POST('/v1/organizations', { body: { name, ...(opts.slug ? { slug: opts.slug } : {}) } }));
      ctx.out.result(org, () => `Created organization ${org.slug} (${org.id})`);
    });

  const projects = program.command('projects').description('Projects');
  projects
    .command('list')
    .description('Projects of your organizations')
    .option('--org <org>', 'only this organization')
    .action(async (opts: { org?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const list = (await ok(ctx.api.GET('/v1/projects'))).filter((p) => !opts.org || p.organization_slug === opts.org);
      ctx.out.table(
        list,
        [
          { header: 'PROJECT', value: (p) => `${p.organization_slug}/${p.slug}` },
          { header: 'NAME', value: (p) => p.name },
          { header: 'APPS', value: (p) => p.application_count },
          { header: 'CREATED', value: (p) => when(p.created) },
        ],
        'no projects',
      );
    });
  projects
    .command('get')
    .description('A project')
    .argument('<org/project>')
    .action(async (path: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const { org, project } = projectPath(path);
      const p = await ok(
        ctx.api.GET('/v1/projects/{org_slug}/{project_slug}', { params: { path: { org_slug: org, project_slug: project } } }),
      );
      ctx.out.fields(p, [
        ['Name', p.name],
        ['Project', `${p.organization_slug}/${p.slug}`],
        ['Id', p.id],
        ['Applications', p.application_count],
        ['Created', when(p.created)],
      ]);
    });
  projects
    .command('create')
    .description('Create a project')
    .argument('<name>')
    .requiredOption('--org <org>', 'organization slug')
    .option('--slug <slug>')
    .action(async (name: string, opts: { org: string; slug?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const org = await ok(ctx.api.GET('/v1/organizations/{org_slug}', { params: { path: { org_slug: opts.org } } }));
      const p = await ok(
        ctx.api.POST('/v1/projects', { body: { name, organization_id: org.id, ...(opts.slug ? { slug: opts.slug } : {}) } }),
      );
      ctx.out.result(p, () => `Created project ${p.organization_slug}/${p.slug} (${p.id})`);
    });

  const apps = program.command('apps').alias('services').description('Applications (services)');
  apps
    .command('list')
    .description("A project's applications (default: every project's)")
    .option('--project <org/project>')
    .action(async (opts: { project?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const targets = opts.project
        ? [projectPath(opts.project)]
        : (await ok(ctx.api.GET('/v1/projects'))).map((p) => ({ org: p.organization_slug, project: p.slug }));
      const rows = [];
      for (const t of targets) {
        // The list comes in pages of 100; `Link: <…>; rel="next"` says another follows.
        for (let page = 1; ; page++) {
          const answer = ctx.api.GET('/v1/applications/{org_slug}/{project_slug}', {
            params: { path: { org_slug: t.org, project_slug: t.project }, query: { page } },
          });
          const list = await ok(answer);
          rows.push(...list.map((a) => ({ ...a, path: `${t.org}/${t.project}/${a.slug}` })));
          if (!/rel="next"/.test((await answer).response.headers.get('link') ?? '')) break;
        }
      }
      ctx.out.table(
        rows,
        [
          { header: 'APP', value: (a) => a.path },
          { header: 'NAME', value: (a) => a.name },
          { header: 'BUILD', value: (a) => a.latest_image_version && `v${a.latest_image_version}` },
          { header: 'RELEASE', value: (a) => a.latest_release_version && `v${a.latest_release_version}` },
          { header: 'CREATED', value: (a) => when(a.created) },
        ],
        'no applications',
      );
    });
  apps
    .command('get')
    .alias('info')
    .description('An application (default: the linked one)')
    .argument('[org/project/app]')
    .action(async (path: string | undefined, _o, command: Command) => {
      const ctx = Context.of(command);
      if (path) ctx.options.app = path;
      const a = await ctx.app();
      ctx.out.fields(a, [
        ['Application', `${a.organization_slug}/${a.project_slug}/${a.slug}`],
        ['Name', a.name],
        ['Id', a.id],
        ['Repository', a.github_repository],
        ['Branch', a.auto_deploy_branch],
        ['Processes', a.process_counts],
        ['Pod classes', a.process_pod_classes],
        ['Health check', a.health_check_path],
        ['Start command', a.start_command],
        ['Latest build', a.latest_image && `v${a.latest_image.version}`],
        ['Latest release', a.latest_release && `v${a.latest_release.version}`],
        ['Created', when(a.created)],
      ]);
    });
  apps
    .command('create')
    .description('Create an application')
    .argument('<name>')
    .requiredOption('--project <org/project>')
    .option('--slug <slug>')
    .option('--repo <repository>', 'git repository: owner/repo, a git URL or a local path')
    .option('--branch <branch>', 'branch deployed by `slipway deploy`')
    .option('--link', 'link the current directory to it')
    .action(
      async (name: string, opts: { project: string; slug?: string; repo?: string; branch?: string; link?: boolean }, command: Command) => {
        const ctx = Context.of(command);
        ctx.requireKey();
        const { org, project } = projectPath(opts.project);
        const p = await ok(
          ctx.api.GET('/v1/projects/{org_slug}/{project_slug}', { params: { path: { org_slug: org, project_slug: project } } }),
        );
        let a = await ok(ctx.api.POST('/v1/applications', { body: { name, project_id: p.id, ...(opts.slug ? { slug: opts.slug } : {}) } }));
        if (opts.repo || opts.branch) {
          a = await ok(
            ctx.api.PATCH('/v1/applications/{application_id}/settings', {
              params: { path: { application_id: a.id } },
              body: {
                ...(opts.repo ? { github_repository: opts.repo } : {}),
                ...(opts.branch ? { auto_deploy_branch: opts.branch } : {}),
              },
            }),
          );
        }
        const path = `${a.organization_slug}/${a.project_slug}/${a.slug}`;
        if (opts.link) link(ctx, a.id, path);
        ctx.out.result(a, () => `Created application ${path} (${a.id})${opts.link ? `, linked to ${ctx.cwd}` : ''}`);
      },
    );
  apps
    .command('link')
    .description('Remember the application for this directory (and those below it)')
    .argument('<org/project/app>')
    .action(async (path: string, _o, command: Command) => {
      const ctx = Context.of(command);
      ctx.options.app = path;
      const a = await ctx.app();
      const name = `${a.organization_slug}/${a.project_slug}/${a.slug}`;
      link(ctx, a.id, name);
      ctx.out.result({ directory: ctx.cwd, application_id: a.id, name }, () => `Linked ${ctx.cwd} to ${name}`);
    });
  apps
    .command('unlink')
    .description('Forget the application of this directory')
    .action(async (_o, command: Command) => {
      const ctx = Context.of(command);
      updateSettings((s) => {
        delete s.links?.[ctx.cwd];
      }, ctx.settingsFile);
      ctx.out.result({ directory: ctx.cwd, unlinked: true }, () => `Unlinked ${ctx.cwd}`);
    });

  const envs = program.command('envs').description("A project's environments");
  envs
    .command('list')
    .description("Environments (of --project, else the linked application's project)")
    .option('--project <org/project>')
    .action(async (opts: { project?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const { org, project } = await projectOf(ctx, opts.project);
      const list = await ok(
        ctx.api.GET('/v1/workspaces/{workspace}/projects/{project}/envs', { params: { path: { workspace: org, project } } }),
      );
      ctx.out.table(list, [
        { header: 'ENV', value: (e) => e.slug },
        { header: 'NAME', value: (e) => e.name },
        { header: 'TYPE', value: (e) => e.env_type },
        { header: 'BRANCH', value: (e) => e.auto_deploy_branch },
        { header: 'PROTECTED', value: (e) => (e.protected ? 'yes' : 'no') },
        { header: 'CREATED', value: (e) => when(e.created) },
      ]);
    });
  envs
    .command('get')
    .description('An environment')
    .argument('<env>')
    .option('--project <org/project>')
    .action(async (env: string, opts: { project?: string }, command: Command) => {
      const ctx = Context.of(command);
      ctx.requireKey();
      const { org, project } = await projectOf(ctx, opts.project);
      const e = await ok(
        ctx.api.GET('/v1/workspaces/{workspace}/projects/{project}/envs/{env}', { params: { path: { workspace: org, project, env } } }),
      );
      ctx.out.fields(e, [
        ['Environment', e.slug],
        ['Name', e.name],
        ['Type', e.env_type],
        ['Branch', e.auto_deploy_branch],
        ['Protected', e.protected ? 'yes' : 'no'],
        ['Processes', e.process_counts],
        ['Created', when(e.created)],
      ]);
    });
  envs
    .command('create')
    .description('Create an environment')
    .argument('<name>')
    .option('--project <org/project>')
    .option('--slug <slug>')
    .option('--type <type>', 'production | staging | development | preview')
    .option('--branch <branch>', 'branch its deploys build')
    .option('--protected', 'only admins deploy')
    .action(
      async (
        name: string,
        opts: { project?: string; slug?: string; type?: string; branch?: string; protected?: boolean },
        command: Command,
      ) => {
        const ctx = Context.of(command);
        ctx.requireKey();
        const { org, project } = await projectOf(ctx, opts.project);
        const types = ['production', 'staging', 'development', 'preview'] as const;
        const envType = opts.type as (typeof types)[number] | undefined;
        if (envType && !types.includes(envType)) throw usage(`--type must be one of ${types.join(', ')}`);
        const e = await ok(
          ctx.api.POST('/v1/workspaces/{workspace}/projects/{project}/envs', {
            params: { path: { workspace: org, project } },
            body: {
              name,
              ...(opts.slug ? { slug: opts.slug } : {}),
              ...(envType ? { env_type: envType } : {}),
              ...(opts.branch ? { auto_deploy_branch: opts.branch } : {}),
              ...(opts.protected ? { protected: true } : {}),
            },
          }),
        );
        ctx.out.result(e, () => `Created environment ${e.slug} in ${org}/${project}`);
      },
    );
}

function link(ctx: Context, applicationId: string, name: string) {
  updateSettings((s) => {
    s.links = { ...s.links, [ctx.cwd]: { application_id: applicationId, name } };
  }, ctx.settingsFile);
}
