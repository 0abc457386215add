import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsRepository } from './configurations.repository.js';
import { configurationsRoutes, type ApplicationAccess } from './configurations.routes.js';
import { ConfigurationsService, type OrganizationAdminCheck, type ScopeWriteGuard } from './configurations.service.js';
import { ScopedConfig } from './scoped-config.js';

/**
 * Variables and their scope chain. `config` answers for applications; `scopedConfig` is the
 * layers of workspaces, teams and environments, served by those modules' routes.
 */
export function wireConfigurations(deps: {
  ctx: AppContext;
  repository: ConfigurationsRepository;
  /** A write to a scope a protected environment inherits needs an organization admin (environments sit above). */
  writeGuard: ScopeWriteGuard;
  isOrganizationAdmin: OrganizationAdminCheck;
  applications: ApplicationAccess;
}) {
  const { ctx } = deps;
  const config = new ConfigurationsService(
    ctx.db,
    deps.repository,
    ctx.secrets,
    { variables: ctx.config.CONFIG_MAX_VARIABLES_PER_SCOPE, bytes: ctx.config.CONFIG_MAX_BYTES_PER_SCOPE },
    deps.writeGuard,
    deps.isOrganizationAdmin,
  );
  const scopedConfig = new ScopedConfig(ctx.db, deps.repository, config);
  return { config, scopedConfig, routes: [configurationsRoutes(deps.applications, config)] } satisfies Wired;
}
