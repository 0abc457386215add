import type { Wired } from '../../platform/wiring.js';
import type { ConfigurationsService, ScopedConfig } from '../configurations/index.js';
import type { OrganizationAccess, OrganizationScope } from '../organizations/index.js';
import type { UsersService } from '../users/index.js';
import type { TeamsRepository } from './teams.repository.js';
import { teamsRoutes } from './teams.routes.js';
import { TeamsService } from './teams.service.js';

export function wireTeams(deps: {
  repository: TeamsRepository;
  users: UsersService;
  organizationScope: OrganizationScope;
  access: OrganizationAccess;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
}) {
  const teams = new TeamsService(deps.repository, deps.users, deps.organizationScope, deps.access);
  return { teams, routes: [teamsRoutes(teams, deps.scopedConfig, deps.config)] } satisfies Wired;
}
