import type { AppContext } from './platform/context.js';
import type { RuntimeLogger } from './platform/runtime/application-runtime.js';
import { MetricsSampler } from './modules/observability/index.js';

/**
 * Starts the runtime (router, removal of leftovers, metrics sampler), then runs the start tasks
 * the composition root added: a `reconcile` for every deployed application environment, so
 * the current releases run again. Call before the
 * job workers start (a deploy needs the router listening). Composes the deployments and
 * observability modules, so it lives beside the composition root rather than in either.
 */
export async function startDeploymentRuntime(ctx: AppContext, logger: RuntimeLogger): Promise<void> {
  const { runtime } = ctx;
  if (!runtime) return;
  await runtime.start({ logger, workerId: () => ctx.jobs?.workerId ?? null });
  const sampler = new MetricsSampler(ctx.db, runtime, ctx.config.OBSERVABILITY_SAMPLE_SECONDS, logger, ctx.usageListeners);
  sampler.start();
  runtime.onShutdown(() => sampler.stop());
  for (const task of ctx.runtimeStartTasks ?? []) await task();
}
