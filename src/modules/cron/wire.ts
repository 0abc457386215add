import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { OneOffRunsService } from '../../pipeline/index.js';
import { CronScheduler } from './cron-scheduler.js';
import type { CronRepository } from './cron.repository.js';
import { cronRoutes } from './cron.routes.js';
import { CronService } from './cron.service.js';

/** Scheduled jobs; the scheduler runs in every process with pipeline workers (each occurrence is taken once). */
export function wireCron(deps: {
  ctx: AppContext;
  repository: CronRepository;
  apps: ApplicationsService;
  runs: OneOffRunsService;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const cron = new CronService(ctx.db, deps.repository, deps.apps, deps.runs, ctx.config.CRON_SECONDS_FIELD);
  const cronScheduler =
    ctx.jobs && ctx.runtime
      ? new CronScheduler(
          ctx.db,
          deps.repository,
          deps.runs,
          { pollMs: ctx.config.CRON_POLL_MS, allowSeconds: ctx.config.CRON_SECONDS_FIELD },
          deps.log.child({ component: 'cron' }),
        )
      : null;
  return { cron, cronScheduler, routes: [cronRoutes(cron)] } satisfies Wired;
}
