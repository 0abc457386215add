import { buildApp } from '../../src/app.js';
import { start } from '../../src/lifecycle.js';
import { applicationJobPorts } from '../../src/platform/jobs/application-ports.js';
import { composePlatform } from '../../src/services.js';
import { pino } from 'pino';
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
    db: h.ctx.db,
    ports: applicationJobPorts(h.ctx.db),
    pollIntervalMs: 200,
    heartbeatIntervalMs: 1000,
    stopTimeoutMs: 5000,
  });
  await ctx.jobs.start();
  ctx.runtime = await createRuntime(h.ctx.config, h.ctx.db);
  const logger = pino({ level: 'silent' });
  const composition = composePlatform(ctx, logger);
  const app = await buildApp(ctx, { composition, loggerInstance: logger });
  const running = await start({ composition, logger, workers: true, http: { app } });
  return {
    app,
    ctx,
    async stop() {
      await running.stop();
      await ctx.jobs!.stop();
      await ctx.runtime!.shutdown();
    },
  };
}
