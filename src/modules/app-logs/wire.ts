import type { AppContext } from '../../platform/context.js';
import type { Notifications } from '../../platform/db/notifications.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import { AppLogWriter, sweepAppLogs } from './app-log-writer.js';
import type { AppLogsRepository } from './app-logs.repository.js';
import { appLogsRoutes } from './app-logs.routes.js';
import { AppLogsService } from './app-logs.service.js';
import { oldestLiveWorker, servingReleaseScrubber, type LeaderCheck } from './cluster-logs.js';

/**
 * Application logs: the output of the instances this process runs (or follows on a cluster),
 * rotated by size and age. With a cluster's shared workloads only the oldest live worker
 * stores them: its `leaderCheck` is started by src/lifecycle.ts.
 */
export function wireAppLogs(deps: {
  ctx: AppContext;
  repository: AppLogsRepository;
  apps: { authorize(userId: string, applicationId: string): Promise<unknown> };
  notifications: Notifications;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const runtimeLog = deps.log.child({ component: 'runtime' });
  let leaderCheck: LeaderCheck | null = null;
  if (ctx.runtime) {
    leaderCheck = ctx.runtime.sharedWorkloads
      ? oldestLiveWorker(ctx, (err) => runtimeLog.warn({ err }, 'application log leader check failed'))
      : null;
    const check = leaderCheck;
    const writer = new AppLogWriter(ctx.db, deps.repository, {
      maxBytesPerApp: ctx.config.APP_LOG_MAX_BYTES_PER_APP,
      logger: runtimeLog,
      ...(check ? { scrub: servingReleaseScrubber(ctx), shouldStore: () => check.isLeader() } : {}),
    });
    ctx.runtime.onInstanceOutput((line) => writer.accept(line));
    ctx.runtime.onShutdown(() => writer.flush());
  }
  const appLogs = new AppLogsService(ctx.db, deps.repository, deps.apps, deps.notifications);
  const sweep = () => sweepAppLogs(deps.repository, ctx.config.APP_LOG_RETENTION_HOURS, ctx.config.APP_LOG_MAX_BYTES_PER_APP);
  return { appLogs, leaderCheck, routes: [appLogsRoutes(appLogs)], sweepers: [{ sweep }] } satisfies Wired;
}
