import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import { workspacesRoutes } from './workspaces.routes.js';

/** The Ancla-shaped routes: HTTP only, over the modules' services (it builds no service of its own). */
export function wireAncla(deps: {
  organizations: OrganizationsService;
  organizationScope: OrganizationScope;
  projects: ProjectsService;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
}) {
  const workspaces = workspacesRoutes({
    organizations: deps.organizations,
    scope: deps.organizationScope,
    projects: deps.projects,
    scopedConfig: deps.scopedConfig,
    config: deps.config,
  });
  return { routes: [workspaces] } satisfies Wired;
}
