import type { Wired } from '../../platform/wiring.js';
import type { OrganizationAccess, OrganizationScope } from '../organizations/index.js';
import type { ProjectsRepository } from './projects.repository.js';
import { projectsRoutes } from './projects.routes.js';
import { ProjectsService } from './projects.service.js';

export function wireProjects(deps: { repository: ProjectsRepository; access: OrganizationAccess; organizationScope: OrganizationScope }) {
  const projects = new ProjectsService(deps.repository, deps.access, deps.organizationScope);
  return { projects, routes: [projectsRoutes(projects)] } satisfies Wired;
}
