import type { AppContext } from '../../platform/context.js';
import type { GitHubApi } from '../../platform/github/github-api.js';
import { GitHubSetupFlow } from '../../platform/github/setup-flow.js';
import type { Wired } from '../../platform/wiring.js';
import type { DeployChain } from '../../pipeline/index.js';
import { GitHubDeploymentReports } from './deployment-reports.js';
import { GithubHooksService, type HookHandlers } from './github-hooks.service.js';
import { githubRoutes } from './github.routes.js';
import { githubInstallationsRoutes } from './installations.routes.js';
import { GitHubInstallationsService, type InstallationOrganizations } from './installations.service.js';

/** GitHub: pushes and pull requests in, the Deployments API reported to (told by the deploy chain), installations. */
export function wireGithub(deps: {
  ctx: AppContext;
  deployChain: DeployChain;
  github: GitHubApi;
  organizations: InstallationOrganizations;
  handlers: HookHandlers;
}) {
  const { ctx, deployChain } = deps;
  deployChain.observe(new GitHubDeploymentReports(ctx.db, deps.github));
  const githubHooks = new GithubHooksService(ctx, (id, ref, environmentId) => deployChain.start(id, ref, environmentId), deps.handlers);
  const githubInstallations = new GitHubInstallationsService(ctx.db, new GitHubSetupFlow(ctx.config, ctx.secrets), deps.organizations);
  return {
    githubHooks,
    githubInstallations,
    routes: [githubRoutes(githubHooks), githubInstallationsRoutes(githubInstallations)],
  } satisfies Wired;
}
