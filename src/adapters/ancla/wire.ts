import type { Wired } from '../../platform/wiring.js';
import type { App } from '../../platform/http/types.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { EnvironmentsService } from '../../modules/environments/index.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import type {
  ApplicationRemoval,
  DeploymentsService,
  EnvDeploysService,
  ImagesService,
  PipelineService,
  ReleasesService,
} from '../../pipeline/index.js';
import type { TeamsService } from '../../modules/teams/index.js';
import type { ObservabilityService } from '../../modules/observability/index.js';
import type { AddonsService } from '../../modules/addons/index.js';
import { addonsRoutes } from './addons.routes.js';
import { envDeploysRoutes } from './env-deploys.routes.js';
import { execRoutes } from './exec.routes.js';
import type { InstanceExecService } from '../../modules/instance-exec/index.js';
import { lenientBodies } from './lenient-bodies.js';
import { recordsRoutes } from './records.routes.js';
import { servicesRoutes } from './services.routes.js';
import { serviceIds } from './service-ids.js';
import { teamsRoutes } from './teams.routes.js';
import { environmentsRoutes } from './environments.routes.js';
import { pipelineRoutes } from './pipeline.routes.js';
import { promoteRoutes } from './promote.routes.js';
import { observabilityRoutes } from './observability.routes.js';
import { workspacesRoutes } from './workspaces.routes.js';

/**
 * The Ancla-shaped routes: HTTP only, over the modules' and the pipeline's services (it builds no
 * service of its own). One route scope, so what applies to Ancla's routes (lenient bodies)
 * applies to all of them and to none of Slipway's own.
 */
export function wireAncla(deps: {
  organizations: OrganizationsService;
  organizationScope: OrganizationScope;
  projects: ProjectsService;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
  apps: ApplicationsService;
  environments: EnvironmentsService;
  teams: TeamsService;
  observability: ObservabilityService;
  addons: AddonsService;
  /** `ancla ssh`/`ancla shell`: exec sessions attached through the SSH gateway (port 0: none). */
  exec: { service: InstanceExecService; ssh: { port: number; host: string } };
  pipeline: {
    images: ImagesService;
    deployments: DeploymentsService;
    releases: ReleasesService;
    envDeploys: EnvDeploysService;
    status: PipelineService;
    removal: ApplicationRemoval;
  };
}) {
  const { pipeline, organizationScope: scope } = deps;
  const { deployments, envDeploys } = pipeline;
  const routes = [
    workspacesRoutes({
      organizations: deps.organizations,
      scope,
      projects: deps.projects,
      scopedConfig: deps.scopedConfig,
      config: deps.config,
    }),
    teamsRoutes(deps.teams, deps.scopedConfig, deps.config),
    environmentsRoutes(deps.environments, deps.scopedConfig, deps.config),
    servicesRoutes({
      apps: deps.apps,
      environments: deps.environments,
      scope,
      images: pipeline.images,
      deployments,
      envDeploys,
      status: pipeline.status,
      removal: pipeline.removal,
      config: deps.config,
      scopedConfig: deps.scopedConfig,
    }),
    envDeploysRoutes({ deploys: envDeploys, deployments, apps: deps.apps, scope }),
    recordsRoutes({ images: pipeline.images, deployments }),
    pipelineRoutes({ scope, status: pipeline.status, deployments, envDeploys }),
    promoteRoutes({ scope, deployments, releases: pipeline.releases, envDeploys }),
    observabilityRoutes({ scope, projects: deps.projects, observability: deps.observability }),
    addonsRoutes({ scope, addons: deps.addons }),
    execRoutes({ exec: deps.exec.service, scope, ssh: deps.exec.ssh }),
  ];
  const ancla = async (app: App) => {
    lenientBodies(app);
    serviceIds(app, scope);
    for (const register of routes) await register(app);
  };
  return { routes: [ancla] } satisfies Wired;
}
