import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import type { TeamsService } from '../../modules/teams/index.js';
import type { EnvironmentsService } from '../../modules/environments/index.js';
import { teamsRoutes } from './teams.routes.js';
import { environmentsRoutes } from './environments.routes.js';
import type { PipelineService } from '../../pipeline/index.js';
import { pipelineRoutes } from './pipeline.routes.js';
import { workspacesRoutes } from './workspaces.routes.js';

/** The Ancla-shaped routes: HTTP only, over the modules' services (it builds no service of its own). */
export function wireAncla(deps: {
  organizations: OrganizationsService;
  organizationScope: OrganizationScope;
  projects: ProjectsService;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
  teams: TeamsService;
  environments: EnvironmentsService;
  pipelineStatus: PipelineService;
}) {
  const workspaces = workspacesRoutes({
    organizations: deps.organizations,
    scope: deps.organizationScope,
    projects: deps.projects,
    scopedConfig: deps.scopedConfig,
    config: deps.config,
  });
  const teams = teamsRoutes(deps.teams, deps.scopedConfig, deps.config);
  const environments = environmentsRoutes(deps.environments, deps.scopedConfig, deps.config);
  const pipeline = pipelineRoutes({ scope: deps.organizationScope, status: deps.pipelineStatus });
  return { routes: [workspaces, teams, environments, pipeline] } satisfies Wired;
}
