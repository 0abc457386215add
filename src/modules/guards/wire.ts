import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { DeploymentsService } from '../../pipeline/index.js';
import { GuardWatcher, type AlertFiredSince } from './guard-watcher.js';
import type { GuardsRepository } from './guards.repository.js';
import { guardsRoutes } from './guards.routes.js';
import { GuardsService } from './guards.service.js';

/** Guarded rollouts; the watcher (built, started by src/lifecycle.ts) judges deployments under watch in processes with jobs. */
export function wireGuards(deps: {
  ctx: AppContext;
  repository: GuardsRepository;
  apps: ApplicationsService;
  deployments: DeploymentsService;
  log: PlatformLogger;
  alertFiredSince?: AlertFiredSince;
}) {
  const { ctx } = deps;
  const guards = new GuardsService(ctx.db, deps.repository, deps.apps);
  const guardWatcher = ctx.jobs
    ? new GuardWatcher(
        ctx.db,
        deps.repository,
        deps.deployments,
        ctx.config.GUARD_CHECK_MS,
        deps.log.child({ component: 'guard' }),
        deps.alertFiredSince,
      )
    : null;
  return { guards, guardWatcher, routes: [guardsRoutes(guards)] } satisfies Wired;
}
