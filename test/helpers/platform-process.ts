import { buildApp } from '../../src/app.js';
import { startDeploymentRuntime } from '../../src/runtime-startup.js';
import type { AppContext } from '../../src/platform/context.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { createRuntime } from '../../src/platform/runtime/index.js';
import type { Harness } from './harness.js';

export type PlatformProcess = Awaited<ReturnType<typeof startPlatformProcess>>;

/**
 * Another platform process (API, workers, runtime) on the harness's database: what starting the
 * server again looks like; stop it and start another for a restart.
 */
export async function startPlatformProcess(h: Harness) {
  const ctx: AppContext = { config: h.ctx.config, db: h.ctx.db, secrets: h.ctx.secrets, databaseUrl: h.databaseUrl };
  ctx.jobs = new PipelineJobs({
    databaseUrl: h.databaseUrl,
    db: h.ctx.db,
    pollIntervalMs: 200,
    heartbeatIntervalMs: 1000,
    stopTimeoutMs: 5000,
  });
  await ctx.jobs.start();
  ctx.runtime = await createRuntime(h.ctx.config, h.ctx.db);
  const app = await buildApp(ctx, { logger: false });
  await app.ready();
  await startDeploymentRuntime(ctx, app.log);
  await ctx.jobs.startWorkers();
  return {
    app,
    ctx,
    async stop() {
      await app.close();
      await ctx.jobs!.stop();
      await ctx.runtime!.shutdown();
    },
  };
}
