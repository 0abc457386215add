import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { ImagesService } from '../images/index.js';
import type { ReleasesService } from '../releases/index.js';
import { DeployChain } from './deploy-chain.js';
import { queueReconcileOfDeployed, registerDeploymentJobs } from './deployments.jobs.js';
import type { DeploymentsRepository } from './deployments.repository.js';
import { deploymentsRoutes } from './deployments.routes.js';
import { DeploymentsService } from './deployments.service.js';
import type { OneOffRunsRepository } from './one-off-runs.repository.js';
import { oneOffRunsRoutes } from './one-off-runs.routes.js';
import { OneOffRunsService } from './one-off-runs.service.js';

/**
 * The deploy stage, the chain that runs build → release → deploy as one job, and one-off runs.
 * `reconcileDeployed` is a start step (src/lifecycle.ts): once the runtime runs, every deployed
 * application environment is queued to run its current release again.
 */
export function wireDeployments(deps: {
  ctx: AppContext;
  repository: DeploymentsRepository;
  runsRepository: OneOffRunsRepository;
  apps: ApplicationsService;
  images: ImagesService;
  releases: ReleasesService;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const runtimeLog = deps.log.child({ component: 'runtime' });
  const deployments = new DeploymentsService(ctx, deps.repository, deps.apps);
  registerDeploymentJobs(ctx, { deployments: deps.repository, runs: deps.runsRepository }, runtimeLog);
  // `POST /applications/{id}/deploy` (and GitHub pushes): build → release → deploy as one job.
  const deployChain = new DeployChain(ctx, deps.repository, deps.apps, deps.images, deps.releases);
  deployChain.registerJobs(runtimeLog);
  const runs = new OneOffRunsService(ctx, deps.runsRepository, deps.repository, deps.apps);
  return {
    deployments,
    deployChain,
    runs,
    reconcileDeployed: () => queueReconcileOfDeployed(ctx, deps.repository),
    routes: [deploymentsRoutes(deployments, deployChain)],
    runsRoutes: [oneOffRunsRoutes(runs)],
  } satisfies Wired;
}
