import type { Builder } from '../platform/builder/index.js';
import type { AppContext } from '../platform/context.js';
import type { PlatformLogger } from '../platform/wiring.js';
import type { ApplicationsService } from '../modules/applications/index.js';
import type { ConfigurationsService } from '../modules/configurations/index.js';
import type { OrganizationScope } from '../modules/organizations/index.js';
import { imageRecords } from './build/image-records.js';
import type { ImagesRepository } from './build/images.repository.js';
import { ImagesService } from './build/images.service.js';
import { ReleasePromoter } from './release/promotion.js';
import type { ReleasesRepository } from './release/releases.repository.js';
import { ReleasesService } from './release/releases.service.js';
import type { DeploymentsRepository } from './deploy/deployments.repository.js';
import { queueReconcileOfDeployed, registerDeploymentJobs } from './deploy/deployments.jobs.js';
import { DeploymentsService } from './deploy/deployments.service.js';
import { ApplicationRemoval } from './deploy/application-removal.js';
import { DeployChain } from './deploy-chain.js';
import { ConfigRelease } from './release/config-release.js';
import { ImageDeploys } from './build/image-deploys.js';
import type { OneOffRunsRepository } from './run/one-off-runs.repository.js';
import { OneOffRunsService } from './run/one-off-runs.service.js';
import type { EnvDeploysRepository } from './env-deploys/env-deploys.repository.js';
import { EnvDeploysService } from './env-deploys/env-deploys.service.js';
import { EnvironmentPipeline } from './env-deploys/environment-pipeline.js';
import { PipelineService } from './status/pipeline.service.js';

/**
 * The pipeline's services, built once in stage order (./stages.ts): build, release, deploy, the
 * chain that runs them as one job, one-off runs, environment deploys and promotion, and the status
 * views. Job kinds are registered wherever a job store is open; nothing starts here.
 * `reconcileDeployed` is a start step (src/lifecycle.ts): once the runtime runs, every deployed
 * application environment is queued to run its current release again.
 * The HTTP modules over these services (images, releases, deployments, env-deploys,
 * pipeline-status) only build routes, in the composition root.
 */
export function wirePipeline(deps: {
  ctx: AppContext;
  repositories: {
    images: ImagesRepository;
    releases: ReleasesRepository;
    deployments: DeploymentsRepository;
    oneOffRuns: OneOffRunsRepository;
    envDeploys: EnvDeploysRepository;
  };
  apps: ApplicationsService;
  config: ConfigurationsService;
  organizationScope: OrganizationScope;
  builders: Builder[];
  requireBuildRoom: (applicationId: string) => Promise<void>;
  log: PlatformLogger;
}) {
  const { ctx, repositories: repos, apps, config } = deps;
  const runtimeLog = deps.log.child({ component: 'runtime' });

  const images = new ImagesService(ctx, repos.images, apps, config, deps.builders, deps.requireBuildRoom);
  if (ctx.jobs) images.registerJobs(ctx.jobs);
  const imageSource = imageRecords(repos.images);

  const releases = new ReleasesService(ctx, repos.releases, imageSource, apps, config);
  if (ctx.jobs) releases.registerJobs(ctx.jobs);
  const promoter = new ReleasePromoter(ctx, repos.releases, imageSource, config);

  const deployments = new DeploymentsService(ctx, repos.deployments, apps);
  registerDeploymentJobs(ctx, { deployments: repos.deployments, runs: repos.oneOffRuns }, runtimeLog);
  // `POST /applications/{id}/deploy` (and GitHub pushes): build → release → deploy as one job.
  const deployChain = new DeployChain(ctx, repos.deployments, apps, images, releases);
  deployChain.registerJobs(runtimeLog);
  const runs = new OneOffRunsService(ctx, repos.oneOffRuns, repos.deployments, apps);
  // A configuration change goes live on the built image: release + deploy, no build.
  const configRelease = new ConfigRelease(
    ctx,
    apps,
    config,
    releases,
    (a, e, r) => deployments.queue(a, e, r),
    (a, e) => deployments.servingImage(a, e),
  );

  const status = new PipelineService(ctx.db, apps);
  const environmentPipeline = new EnvironmentPipeline(ctx, deployChain, deployments, promoter);
  const envDeploys = new EnvDeploysService(
    ctx.db,
    repos.envDeploys,
    environmentPipeline,
    deps.organizationScope,
    deps.log.child({ component: 'env-deploys' }),
  );

  return {
    images,
    imageSource,
    releases,
    promoter,
    deployments,
    deployChain,
    configRelease,
    // `POST /applications/{id}/deploy` with an `image`: a pushed image released without a build.
    imageDeploys: new ImageDeploys(ctx, apps, (a, r, e, s) => deployChain.start(a, r, e, s)),
    runs,
    status,
    envDeploys,
    removal: new ApplicationRemoval(ctx, apps),
    reconcileDeployed: () => queueReconcileOfDeployed(ctx, repos.deployments),
  };
}

export type Pipeline = ReturnType<typeof wirePipeline>;
