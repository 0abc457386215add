import type { Db } from '../../platform/db/database.js';
import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../configurations/index.js';
import type { OrganizationAccess, OrganizationsService } from '../organizations/index.js';
import { WorkspaceScope } from './workspace-scope.js';
import type { WorkspacesRepository } from './workspaces.repository.js';
import { workspacesRoutes } from './workspaces.routes.js';
import { WorkspacesService } from './workspaces.service.js';

/** The workspace scope the feature services resolve through; the workspaces' own routes once configuration exists. */
export function wireWorkspaceScope(deps: { db: Db; organizations: OrganizationsService; access: OrganizationAccess }) {
  return new WorkspaceScope(deps.db, deps.organizations, deps.access);
}

export function wireWorkspaces(deps: {
  db: Db;
  repository: WorkspacesRepository;
  organizations: OrganizationsService;
  workspaceScope: WorkspaceScope;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
}) {
  const workspaces = new WorkspacesService(deps.db, deps.repository, deps.organizations, deps.workspaceScope);
  return { workspaces, routes: [workspacesRoutes(workspaces, deps.scopedConfig, deps.config)] } satisfies Wired;
}
