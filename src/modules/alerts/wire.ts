import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { RequireOrganizationAdmin } from '../webhooks/index.js';
import { AlertEvaluator } from './alert-evaluator.js';
import type { AlertsRepository } from './alerts.repository.js';
import { alertsRoutes } from './alerts.routes.js';
import { ThresholdWatch } from './threshold-watch.js';
import { AlertsService } from './alerts.service.js';

/** Alert rules; the evaluator (built here, started by src/lifecycle.ts where workers run) judges them each interval. */
export function wireAlerts(deps: {
  ctx: AppContext;
  repository: AlertsRepository;
  requireOrganizationAdmin: RequireOrganizationAdmin;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const alerts = new AlertsService(ctx.db, deps.repository, deps.requireOrganizationAdmin);
  const alertEvaluator = ctx.jobs
    ? new AlertEvaluator(
        ctx.db,
        deps.repository,
        ctx.jobs,
        ctx.config.ALERT_EVALUATION_SECONDS,
        deps.log.child({ component: 'alerts' }),
        new ThresholdWatch(ctx.db, ctx.config.ORG_DISK_QUOTA_MB),
      )
    : null;
  /** Whether an alert rule of the environment fired since a time (a guarded deployment's watch counts it as a breach). */
  const firedSince = (applicationId: string, environmentId: string, since: Date) =>
    deps.repository.firedSince(applicationId, environmentId, since);
  return { alerts, alertEvaluator, firedSince, routes: [alertsRoutes(alerts)] } satisfies Wired;
}
