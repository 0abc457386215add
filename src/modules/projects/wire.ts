import type { Wired } from '../../platform/wiring.js';
import type { OrganizationAccess } from '../organizations/index.js';
import type { ProjectsRepository } from './projects.repository.js';
import { projectsRoutes } from './projects.routes.js';
import { ProjectsService } from './projects.service.js';

export function wireProjects(deps: { repository: ProjectsRepository; access: OrganizationAccess }) {
  const projects = new ProjectsService(deps.repository, deps.access);
  return { projects, routes: [projectsRoutes(projects)] } satisfies Wired;
}
