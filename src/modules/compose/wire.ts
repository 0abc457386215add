import type { Config } from '../../config.js';
import type { Wired } from '../../platform/wiring.js';
import type { AddonsService } from '../addons/index.js';
import type { ApplicationsService } from '../applications/index.js';
import type { ConfigurationsService } from '../configurations/index.js';
import type { ProjectsService } from '../projects/index.js';
import type { VolumesService } from '../volumes/index.js';
import { composeRoutes } from './compose.routes.js';
import type { ComposeImportsRepository } from './compose-imports.repository.js';
import { ComposeService, type ComposeDeployer } from './compose.service.js';

/** The Compose import (issue 34): over applications, configuration, add-ons, volumes and the pipeline's deploys. */
export function wireCompose(deps: {
  settings: Config;
  repository: ComposeImportsRepository;
  projects: ProjectsService;
  apps: ApplicationsService;
  config: ConfigurationsService;
  addons: AddonsService;
  volumes: VolumesService;
  deployer: ComposeDeployer;
  vetSource: (userId: string, repository: string) => Promise<unknown>;
}) {
  const compose = new ComposeService(
    deps.settings,
    deps.repository,
    deps.projects,
    deps.apps,
    deps.config,
    deps.addons,
    deps.volumes,
    deps.deployer,
    deps.vetSource,
  );
  return { compose, routes: [composeRoutes(compose)] } satisfies Wired;
}
