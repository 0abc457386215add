import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { RequireOrganizationAdmin } from '../webhooks/index.js';
import { AlertEvaluator } from './alert-evaluator.js';
import type { AlertsRepository } from './alerts.repository.js';
import { alertsRoutes } from './alerts.routes.js';
import { ThresholdWatch } from './threshold-watch.js';
import { AlertsService } from './alerts.service.js';
import { LogMatchCounter } from './log-match-counter.js';

/** Alert rules; the evaluator (built here, started by src/lifecycle.ts where workers run) judges them each interval. */
export function wireAlerts(deps: {
  ctx: AppContext;
  repository: AlertsRepository;
  requireOrganizationAdmin: RequireOrganizationAdmin;
  log: PlatformLogger;
  /** On a cluster, whether this process stores (and so counts) the application logs. */
  logLeader?: { isLeader(): boolean } | null;
}) {
  const { ctx } = deps;
  const log = deps.log.child({ component: 'alerts' });
  const alerts = new AlertsService(ctx.db, deps.repository, deps.requireOrganizationAdmin);
  const alertEvaluator = ctx.jobs
    ? new AlertEvaluator(
        ctx.db,
        deps.repository,
        ctx.jobs,
        ctx.config.ALERT_EVALUATION_SECONDS,
        log,
        new ThresholdWatch(ctx.db, ctx.config.ORG_DISK_QUOTA_MB, log),
      )
    : null;
  // Log pattern rules are counted where the instances' output is read (see log-match-counter.ts).
  if (ctx.runtime) {
    const leader = deps.logLeader;
    const refreshMs = Math.min(30, ctx.config.ALERT_EVALUATION_SECONDS) * 1000;
    const counter = new LogMatchCounter(deps.repository, refreshMs, log, leader ? () => leader.isLeader() : undefined);
    ctx.runtime.onInstanceOutput((line) => counter.accept(line));
    ctx.runtime.onShutdown(() => counter.flush());
  }
  return { alerts, alertEvaluator, routes: [alertsRoutes(alerts)] } satisfies Wired;
}
