import type { Config } from '../../config.js';
import type { Db } from '../../platform/db/database.js';
import type { Wired } from '../../platform/wiring.js';
import type { UsersService } from '../users/index.js';
import { OrganizationAccess } from './access.js';
import { OrganizationScope } from './organization-scope.js';
import type { OrganizationsRepository } from './organizations.repository.js';
import { organizationsRoutes } from './organizations.routes.js';
import { OrganizationsService } from './organizations.service.js';
import { pipelineLimitsRoutes } from './pipeline-limits.js';
import { grantsRoutes } from './grants.js';
import { memberSignInRoutes } from './member-sign-ins.js';
import { invitationsRoutes, showLinkToInviter, type InvitationSender } from './invitations.js';

/**
 * Organizations (the API's workspaces), memberships, the access rule every feature resolves
 * through, and the scope that resolves a path's slugs inside an organization.
 */
export function wireOrganizations(deps: {
  config: Config;
  db: Db;
  repository: OrganizationsRepository;
  users: UsersService;
  /** How invitations are sent (the SMTP mailer when wired); by default the inviter is shown the link. */
  sendInvitation?: InvitationSender;
}) {
  const { config } = deps;
  const access = new OrganizationAccess(deps.repository);
  const organizations = new OrganizationsService(deps.repository, deps.users, access, { orgsPerUserMax: config.ORGS_PER_USER_MAX });
  const scope = new OrganizationScope(deps.db, organizations, access);
  const routes = [
    organizationsRoutes(organizations),
    grantsRoutes(deps.db, organizations),
    memberSignInRoutes(deps.db, organizations),
    invitationsRoutes({
      db: deps.db,
      orgs: organizations,
      users: deps.users,
      ttlHours: config.INVITATION_TTL_HOURS,
      linkBase: config.DASHBOARD_URL,
      send: deps.sendInvitation ?? showLinkToInviter,
    }),
    pipelineLimitsRoutes(organizations, {
      buildTimeoutSeconds: config.BUILD_TIMEOUT_SECONDS,
      diskQuotaMb: config.ORG_DISK_QUOTA_MB,
      outbound: config.SANDBOX_OUTBOUND,
    }),
  ];
  return { access, organizations, scope, routes } satisfies Wired;
}
