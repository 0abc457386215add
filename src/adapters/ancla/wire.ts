import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import type { TeamsService } from '../../modules/teams/index.js';
import type { EnvironmentsService } from '../../modules/environments/index.js';
import { teamsRoutes } from './teams.routes.js';
import { environmentsRoutes } from './environments.routes.js';
import type { DeploymentsService, EnvDeploysService, PipelineService, ReleasesService } from '../../pipeline/index.js';
import type { ObservabilityService } from '../../modules/observability/index.js';
import { pipelineRoutes } from './pipeline.routes.js';
import { promoteRoutes } from './promote.routes.js';
import { observabilityRoutes } from './observability.routes.js';
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
  deployments: DeploymentsService;
  releases: ReleasesService;
  envDeploys: EnvDeploysService;
  observability: ObservabilityService;
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
  const { organizationScope: scope, deployments, envDeploys } = deps;
  const pipeline = pipelineRoutes({ scope, status: deps.pipelineStatus, deployments, envDeploys });
  const promote = promoteRoutes({ scope, deployments, releases: deps.releases, envDeploys });
  const observability = observabilityRoutes({ scope, projects: deps.projects, observability: deps.observability });
  return { routes: [workspaces, teams, environments, pipeline, promote, observability] } satisfies Wired;
}
