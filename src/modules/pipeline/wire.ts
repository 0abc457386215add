import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { DeployChain, DeploymentsService } from '../deployments/index.js';
import type { ReleasePromoter } from '../releases/index.js';
import { EnvironmentPipeline } from './environment-pipeline.js';
import { pipelineRoutes } from './pipeline.routes.js';
import { PipelineService } from './pipeline.service.js';

/** The pipeline's status, and the `ServicePipeline` environments deploy and promote through. */
export function wirePipeline(deps: {
  ctx: AppContext;
  apps: ApplicationsService;
  deployChain: DeployChain;
  deployments: DeploymentsService;
  promoter: ReleasePromoter;
}) {
  const pipeline = new PipelineService(deps.ctx.db, deps.apps);
  const environmentPipeline = new EnvironmentPipeline(deps.ctx, deps.deployChain, deps.deployments, deps.promoter);
  return { pipeline, environmentPipeline, routes: [pipelineRoutes(pipeline)] } satisfies Wired;
}
