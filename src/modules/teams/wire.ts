import type { Wired } from '../../platform/wiring.js';
import type { OrganizationAccess, OrganizationScope } from '../organizations/index.js';
import type { UsersService } from '../users/index.js';
import type { TeamsRepository } from './teams.repository.js';
import { TeamsService } from './teams.service.js';

export function wireTeams(deps: {
  repository: TeamsRepository;
  users: UsersService;
  organizationScope: OrganizationScope;
  access: OrganizationAccess;
}) {
  const teams = new TeamsService(deps.repository, deps.users, deps.organizationScope, deps.access);
  // Its routes (`/workspaces/{ws}/teams`) are the Ancla adapter's (src/adapters/ancla/teams.routes.ts).
  return { teams, routes: [] } satisfies Wired;
}
