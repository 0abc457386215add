import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { describeNeed, isLogRead, KEY_ACTIONS, routeNeed, routeRoleRule, type KeyAction, type RouteNeed } from './route-actions.js';

/**
 * Roles per organization (issue 32), lowest first: each role has every right of the roles
 * before it. What a role may do is the route table's action words (route-actions.ts), the same
 * words a scoped key is limited to, so one table decides for both; a few routes also need a
 * minimum role (members, invitations, grants: admin; deleting the organization and its access
 * settings: owner). Protected environments take an admin, or a member granted that environment.
 */
export const ROLES = ['viewer', 'deployer', 'developer', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_ACTIONS: Record<Role, readonly KeyAction[]> = {
  viewer: ['read'],
  deployer: ['read', 'deploy', 'scale', 'run'],
  developer: KEY_ACTIONS,
  admin: KEY_ACTIONS,
  owner: KEY_ACTIONS,
};

export const ROLE_MEANINGS: Record<Role, string> = {
  viewer: 'reads everything but secret values; no logs of protected environments when the owner turns them off',
  deployer: 'reads; deploys, rolls back, promotes, scales and runs outside protected environments, and in those granted to them',
  developer: 'every change outside protected environments (and in those granted to them); never a secret value',
  admin: 'everything, protected environments included; manages members, invitations and grants below owner',
  owner: 'an admin who also deletes the organization, sets its access settings and manages owners; there is always one',
};

export const isRole = (value: unknown): value is Role => typeof value === 'string' && (ROLES as readonly string[]).includes(value);
export const roleRank = (role: Role) => ROLES.indexOf(role);
export const atLeast = (role: Role, minimum: Role) => roleRank(role) >= roleRank(minimum);

/** Whether the role may make a request that needs `need` (an action, or a credential's own routes). */
export function roleAllows(role: Role, need: RouteNeed): boolean {
  if (typeof need === 'string') return true;
  return need.anyOf.some((action) => ROLE_ACTIONS[role].includes(action));
}

/** The caller's role in the organization; null when not a member (the route's own check answers that). */
export async function roleOf(db: Db, userId: string, organizationId: string): Promise<Role | null> {
  const row = await db
    .selectFrom('memberships')
    .select('role')
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.role ?? null;
}

/** The 403 for a role that does not cover a route: names the role, the organization and what the route needs. */
export function roleRefused(role: Role, organization: string, needed: { need?: RouteNeed; minimum?: Role }): AppError {
  const what = needed.minimum ? `an ${needed.minimum === 'owner' ? 'owner' : 'admin or owner'}` : describeNeed(needed.need!);
  return new AppError('FORBIDDEN', `Your role in organization '${organization}' is ${role}; this request needs ${what}`);
}

/**
 * What the route table grants a role on one route, without a request: the generated table in
 * docs/roles.md and the role matrix test read this, and checkRouteAccess enforces the same rules.
 * `own`: the caller's own account or a new organization (any signed-in user); `unprotected`:
 * outside protected environments, and in those the member is granted; `logs`: unless the owner
 * keeps protected environments' logs from viewers; `self`: only their own membership (leaving).
 */
export type RouteVerdict = 'public' | 'site-admin' | 'own' | 'allowed' | 'unprotected' | 'logs' | 'self' | 'refused';

export function routeVerdict(route: { method: string; url: string; public: boolean }, role: Role): RouteVerdict {
  if (route.public) return 'public';
  const rule = routeRoleRule(route.method, route.url);
  if (rule?.siteAdmin) return 'site-admin';
  const need = routeNeed(route.method, route.url);
  if (typeof need === 'string') return 'own';
  if (rule?.minimum && !atLeast(role, rule.minimum)) return rule.exceptSelf ? 'self' : 'refused';
  if (!roleAllows(role, need)) return 'refused';
  if (route.method === 'GET') return isLogRead(route.method, route.url) && role === 'viewer' ? 'logs' : 'allowed';
  return atLeast(role, 'admin') ? 'allowed' : 'unprotected';
}
