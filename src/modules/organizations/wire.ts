import type { Config } from '../../config.js';
import type { Wired } from '../../platform/wiring.js';
import type { UsersService } from '../users/index.js';
import { OrganizationAccess } from './access.js';
import type { OrganizationsRepository } from './organizations.repository.js';
import { organizationsRoutes } from './organizations.routes.js';
import { OrganizationsService } from './organizations.service.js';
import { pipelineLimitsRoutes } from './pipeline-limits.js';

/** Organizations (workspaces' records), memberships, the access rule every feature resolves through. */
export function wireOrganizations(deps: { config: Config; repository: OrganizationsRepository; users: UsersService }) {
  const { config } = deps;
  const access = new OrganizationAccess(deps.repository);
  const organizations = new OrganizationsService(deps.repository, deps.users, access, { orgsPerUserMax: config.ORGS_PER_USER_MAX });
  const routes = [
    organizationsRoutes(organizations),
    pipelineLimitsRoutes(organizations, {
      buildTimeoutSeconds: config.BUILD_TIMEOUT_SECONDS,
      diskQuotaMb: config.ORG_DISK_QUOTA_MB,
      outbound: config.SANDBOX_OUTBOUND,
    }),
  ];
  return { access, organizations, routes } satisfies Wired;
}
