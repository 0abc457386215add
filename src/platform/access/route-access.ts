import type { Db } from '../db/database.js';
import { AppError, forbidden } from '../errors.js';
import type { Principal } from '../http/types.js';
import { checkScope, positionOf, productionOf, scopeRefused, type Position } from './key-scope.js';
import { isLogRead, routeNeed, routeRoleRule, type RouteNeed } from './route-actions.js';
import { atLeast, roleAllows, roleRefused, type Role } from './roles.js';

type Fields = Record<string, unknown>;

async function membershipOf(db: Db, userId: string, organizationId: string) {
  return db
    .selectFrom('memberships as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select(['m.role', 'o.slug', 'o.viewers_see_protected_logs'])
    .where('m.organization_id', '=', organizationId)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
}

/** Whether the request's environment (an application's production when it names none) is protected. */
async function protectedTarget(db: Db, pos: Position): Promise<boolean> {
  const environmentId = pos.environmentId ?? (pos.applicationId ? await productionOf(db, pos.applicationId) : null);
  if (!environmentId) return false;
  const row = await db.selectFrom('environments').select('protected').where('id', '=', environmentId).executeTakeFirst();
  return row?.protected ?? false;
}

const plainReads = new Map<string, boolean>();

/**
 * Whether `method url` (a route pattern) is a read every role may make with no lookup: not a log
 * read, no role rule, no site flag. For a credential without limits `checkRouteAccess` then has
 * nothing to check: most requests, answered without a promise (issue 35). Known per route pattern.
 */
export function isPlainRead(method: string, url: string): boolean {
  const key = `${method} ${url}`;
  let plain = plainReads.get(key);
  if (plain === undefined) {
    plain = (method === 'GET' || method === 'HEAD') && !isLogRead(method, url) && routeRoleRule(method, url) === null;
    plainReads.set(key, plain);
  }
  return plain;
}

/**
 * The one check every /v1 route passes before its handler (issue 32): the route's entry in the
 * route table (route-actions.ts) against the caller's role in the organization the request acts
 * in, then against a scoped key's limits. A caller who is not a member passes here: the route's
 * own lookup answers 403 or 404 as it always has. Reads need no role lookup (every role reads),
 * except logs, which the owner may keep from viewers in protected environments.
 */
export async function checkRouteAccess(
  db: Db,
  principal: Principal,
  request: { method: string; url: string; params: Fields; query: Fields; body: Fields },
): Promise<AppError | null> {
  const { method, url, params, query, body } = request;
  const userId = principal.user.id;
  const need = routeNeed(method, url);
  const rule = routeRoleRule(method, url);
  // A scoped key's own reason comes first (its limits say more than the site flag).
  if (rule?.siteAdmin) {
    const refusal = principal.scope ? await scopeRefusal(db, principal, request, need, undefined) : null;
    return refusal ?? (principal.user.is_admin ? null : forbidden('Only site administrators can do this'));
  }
  const read = method === 'GET' || method === 'HEAD';
  const logs = isLogRead(method, url);
  let position: Position | undefined;
  if (!read || logs || rule) {
    position = await positionOf(db, params, query, body, userId);
    const known = position.membership;
    const membership = !position.organizationId
      ? undefined
      : known?.organizationId === position.organizationId
        ? known.row
        : await membershipOf(db, userId, position.organizationId);
    if (membership) {
      const role = membership.role as Role;
      const self = rule?.exceptSelf === true && params.user_id === userId;
      if (rule?.minimum && !self && !atLeast(role, rule.minimum)) return roleRefused(role, membership.slug, { minimum: rule.minimum });
      if (!roleAllows(role, need)) return roleRefused(role, membership.slug, { need });
      if (logs && role === 'viewer' && !membership.viewers_see_protected_logs && (await protectedTarget(db, position)))
        return new AppError('FORBIDDEN', `Viewers of organization '${membership.slug}' do not read the logs of protected environments`);
    }
  }
  return principal.scope ? scopeRefusal(db, principal, request, need, position) : null;
}

async function scopeRefusal(
  db: Db,
  principal: Principal,
  request: { method: string; params: Fields; query: Fields; body: Fields },
  need: RouteNeed,
  position: Position | undefined,
): Promise<AppError | null> {
  const refusal = await checkScope(db, principal.user.id, principal.scope!, {
    method: request.method,
    need,
    params: request.params,
    query: request.query,
    body: request.body,
    credentialId: principal.credentialId,
    position,
  });
  return refusal ? scopeRefused(refusal) : null;
}
