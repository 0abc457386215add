import type { AppContext } from '../../platform/context.js';
import type { AppUsage } from '../../platform/runtime/application-runtime.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import { MetricsSampler } from './metrics-sampler.js';
import { observabilityRoutes } from './observability.routes.js';
import { ObservabilityService } from './observability.service.js';

/** Usage of running applications; the sampler (processes with a runtime) is started by src/lifecycle.ts. */
export function wireObservability(deps: {
  ctx: AppContext;
  apps: ApplicationsService;
  /** Told every sample the sampler stores (the autoscaler). */
  usageListeners: Array<(usage: AppUsage[], sampledAt: Date) => Promise<unknown>>;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const observability = new ObservabilityService(ctx.db, deps.apps);
  const metricsSampler = ctx.runtime
    ? new MetricsSampler(
        ctx.db,
        ctx.runtime,
        ctx.config.OBSERVABILITY_SAMPLE_SECONDS,
        deps.log.child({ component: 'runtime' }),
        deps.usageListeners,
      )
    : null;
  return { observability, metricsSampler, routes: [observabilityRoutes(observability)] } satisfies Wired;
}
