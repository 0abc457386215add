import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { ConfigurationsService } from '../configurations/index.js';
import type { ImageRecords } from '../images/index.js';
import { ReleasePromoter } from './promotion.js';
import type { ReleasesRepository } from './releases.repository.js';
import { releasesRoutes } from './releases.routes.js';
import { ReleasesService } from './releases.service.js';

/** The release stage (and the promotion of a release into another environment). */
export function wireReleases(deps: {
  ctx: AppContext;
  repository: ReleasesRepository;
  imageSource: ImageRecords;
  apps: ApplicationsService;
  config: ConfigurationsService;
}) {
  const { ctx } = deps;
  const releases = new ReleasesService(ctx, deps.repository, deps.imageSource, deps.apps, deps.config);
  if (ctx.jobs) releases.registerJobs(ctx.jobs);
  const promoter = new ReleasePromoter(ctx, deps.repository, deps.imageSource, deps.config);
  return { releases, promoter, routes: [releasesRoutes(releases)] } satisfies Wired;
}
