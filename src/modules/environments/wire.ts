import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../configurations/index.js';
import type { WorkspaceScope } from '../workspaces/index.js';
import type { EnvDeploysRepository } from './env-deploys.repository.js';
import { envDeploysRoutes } from './env-deploys.routes.js';
import { EnvDeploysService, type ServicePipeline } from './env-deploys.service.js';
import type { EnvironmentsRepository } from './environments.repository.js';
import { environmentsRoutes } from './environments.routes.js';
import { EnvironmentsService } from './environments.service.js';
import { sweepDeletedEnvironments } from './retirement.js';

/** Environments, their configuration layer, and env deploys through the `ServicePipeline` port. */
export function wireEnvironments(deps: {
  ctx: AppContext;
  repository: EnvironmentsRepository;
  envDeploysRepository: EnvDeploysRepository;
  workspaceScope: WorkspaceScope;
  config: ConfigurationsService;
  scopedConfig: ScopedConfig;
  pipeline: ServicePipeline;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const environments = new EnvironmentsService(ctx.db, deps.repository, deps.workspaceScope, deps.config, ctx.jobs);
  const envDeploys = new EnvDeploysService(
    ctx.db,
    deps.envDeploysRepository,
    deps.pipeline,
    deps.workspaceScope,
    deps.log.child({ component: 'env-deploys' }),
  );
  return {
    environments,
    envDeploys,
    routes: [environmentsRoutes(environments, deps.scopedConfig, deps.config), envDeploysRoutes(envDeploys)],
    // Deleted (and expired preview) environments are removed after PREVIEW_RETENTION_HOURS.
    sweepers: [{ sweep: () => sweepDeletedEnvironments(ctx.db, ctx.config.PREVIEW_RETENTION_HOURS) }],
  } satisfies Wired;
}
