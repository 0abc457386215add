import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import { Autoscaler } from './autoscaler.js';
import type { AutoscalingRepository } from './autoscaling.repository.js';
import { autoscalingRoutes } from './autoscaling.routes.js';
import { AutoscalingService } from './autoscaling.service.js';

/** Autoscaling policies; the autoscaler is evaluated with every metrics sample of a process that runs applications. */
export function wireAutoscaling(deps: {
  ctx: AppContext;
  repository: AutoscalingRepository;
  apps: ApplicationsService;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const autoscaling = new AutoscalingService(ctx.db, deps.repository, deps.apps);
  const autoscaler = ctx.runtime
    ? new Autoscaler(ctx.db, deps.repository, ctx.jobs, ctx.config.OBSERVABILITY_SAMPLE_SECONDS, deps.log.child({ component: 'runtime' }))
    : null;
  return { autoscaling, autoscaler, routes: [autoscalingRoutes(autoscaling)] } satisfies Wired;
}
