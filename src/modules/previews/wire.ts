import type { AppContext } from '../../platform/context.js';
import type { GitHubApi } from '../../platform/github/github-api.js';
import type { Wired } from '../../platform/wiring.js';
import type { DeployChain } from '../../pipeline/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import { PreviewStatuses } from './preview-statuses.js';
import type { PreviewsRepository } from './previews.repository.js';
import { previewsRoutes } from './previews.routes.js';
import { PreviewsService } from './previews.service.js';

/** Preview environments of pull requests (issue 16); their GitHub commit statuses are told by the deploy chain. */
export function wirePreviews(deps: {
  ctx: AppContext;
  repository: PreviewsRepository;
  deployChain: DeployChain;
  github: GitHubApi;
  organizationScope: OrganizationScope;
  /** The URL of a served hostname (the local edge's port, or a cluster's own). */
  urlOf: (hostname: string) => string;
  /** Where an application environment is served, or null before its first deploy. */
  servedUrl: (applicationId: string, environmentId: string) => Promise<string | null>;
}) {
  const { ctx, deployChain } = deps;
  const previews = new PreviewsService(
    ctx.db,
    deps.repository,
    ctx.jobs,
    (id, ref, environmentId) => deployChain.start(id, ref, environmentId),
    { routerDomain: ctx.config.ROUTER_DOMAIN, urlOf: deps.urlOf },
    deps.organizationScope,
  );
  deployChain.observe(new PreviewStatuses(ctx.db, deps.repository, deps.github, deps.servedUrl));
  return { previews, routes: [previewsRoutes(previews)] } satisfies Wired;
}
