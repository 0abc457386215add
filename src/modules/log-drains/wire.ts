import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { RequireOrganizationAdmin } from '../webhooks/index.js';
import type { LogDrainsRepository } from './log-drains.repository.js';
import { logDrainsRoutes } from './log-drains.routes.js';
import { LogDrainsService } from './log-drains.service.js';
import { LogDrainShipper } from './shipper.js';

/**
 * Log drains: the routes everywhere; a shipper where logs are made (a process with a runtime or
 * job workers), started and stopped by src/lifecycle.ts (`drainShipper`).
 */
export function wireLogDrains(deps: {
  ctx: AppContext;
  repository: LogDrainsRepository;
  requireOrganizationAdmin: RequireOrganizationAdmin;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const log = deps.log.child({ component: 'log-drains' });
  const drainShipper =
    ctx.runtime || ctx.jobs
      ? new LogDrainShipper(
          deps.repository,
          ctx.secrets,
          {
            allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE,
            timeoutMs: ctx.config.WEBHOOK_TIMEOUT_MS,
            bufferLines: ctx.config.LOG_DRAIN_BUFFER_LINES,
          },
          log,
        )
      : null;
  const shipper = drainShipper;
  if (shipper) ctx.runtime?.onInstanceOutput(shipper.acceptOutput);
  const logDrains = new LogDrainsService(
    deps.repository,
    ctx.secrets,
    deps.requireOrganizationAdmin,
    { allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE },
    async () => {
      await shipper?.changed().catch((err: unknown) => log.warn({ err }, 'reading log drains failed'));
    },
  );
  return { logDrains, drainShipper, routes: [logDrainsRoutes(logDrains)] } satisfies Wired;
}
