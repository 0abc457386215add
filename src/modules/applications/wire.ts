import type { Db } from '../../platform/db/database.js';
import type { Wired } from '../../platform/wiring.js';
import type { ProjectsService } from '../projects/index.js';
import type { ApplicationsRepository } from './applications.repository.js';
import { applicationsRoutes } from './applications.routes.js';
import {
  ApplicationsService,
  type ApplicationDetailSource,
  type LatestRecordsSource,
  type RepositoryVetter,
  type ScaleListener,
} from './applications.service.js';

/** Applications; what they need from the modules above them comes in as ports (see the service's constructor). */
export function wireApplications(deps: {
  db: Db;
  repository: ApplicationsRepository;
  projects: ProjectsService;
  latest: LatestRecordsSource;
  onScaled: ScaleListener;
  vetRepository: RepositoryVetter;
  detail?: ApplicationDetailSource;
}) {
  const apps = new ApplicationsService(
    deps.db,
    deps.repository,
    deps.projects,
    deps.latest,
    deps.onScaled,
    deps.vetRepository,
    deps.detail,
  );
  return { apps, routes: [applicationsRoutes(apps)] } satisfies Wired;
}
