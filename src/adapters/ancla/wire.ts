import type { Wired } from '../../platform/wiring.js';
import type { App } from '../../platform/http/types.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { EnvironmentsService } from '../../modules/environments/index.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import type { DeploymentsService, EnvDeploysService, ImagesService, PipelineService } from '../../pipeline/index.js';
import { envDeploysRoutes } from './env-deploys.routes.js';
import { lenientBodies } from './lenient-bodies.js';
import { recordsRoutes } from './records.routes.js';
import { servicesRoutes } from './services.routes.js';
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
  pipeline: { images: ImagesService; deployments: DeploymentsService; envDeploys: EnvDeploysService; status: PipelineService };
}) {
  const { pipeline } = deps;
  const routes = [
    workspacesRoutes({
      organizations: deps.organizations,
      scope: deps.organizationScope,
      projects: deps.projects,
      scopedConfig: deps.scopedConfig,
      config: deps.config,
    }),
    servicesRoutes({
      apps: deps.apps,
      environments: deps.environments,
      scope: deps.organizationScope,
      images: pipeline.images,
      deployments: pipeline.deployments,
      envDeploys: pipeline.envDeploys,
      status: pipeline.status,
      config: deps.config,
      scopedConfig: deps.scopedConfig,
    }),
    envDeploysRoutes({ deploys: pipeline.envDeploys, deployments: pipeline.deployments, apps: deps.apps, scope: deps.organizationScope }),
    recordsRoutes({ images: pipeline.images, deployments: pipeline.deployments }),
  ];
  const ancla = async (app: App) => {
    lenientBodies(app);
    for (const register of routes) await register(app);
  };
  return { routes: [ancla] } satisfies Wired;
}
