import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService } from '../configurations/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import type { EnvironmentsRepository } from './environments.repository.js';
import { EnvironmentsService } from './environments.service.js';
import { sweepDeletedEnvironments } from './retirement.js';
import { maintenanceRoutes } from './maintenance.routes.js';
import { MaintenanceService } from './maintenance.service.js';

/** Environments and their configuration layer (their deploys and promotions are the pipeline's: src/pipeline). */
export function wireEnvironments(deps: {
  ctx: AppContext;
  repository: EnvironmentsRepository;
  organizationScope: OrganizationScope;
  config: ConfigurationsService;
  /** After a maintenance toggle: this process's edge reloads at once. */
  edgeChanged?: () => Promise<void>;
}) {
  const { ctx } = deps;
  const environments = new EnvironmentsService(ctx.db, deps.repository, deps.organizationScope, deps.config, ctx.jobs);
  return {
    environments,
    // Its routes (`.../projects/{p}/envs`) are the Ancla adapter's (src/adapters/ancla/environments.routes.ts);
    // maintenance mode is Slipway's own.
    routes: [maintenanceRoutes(new MaintenanceService(ctx.db, deps.organizationScope, deps.edgeChanged))],
    // Deleted (and expired preview) environments are removed after PREVIEW_RETENTION_HOURS.
    sweepers: [{ sweep: () => sweepDeletedEnvironments(ctx.db, ctx.config.PREVIEW_RETENTION_HOURS) }],
  } satisfies Wired;
}
