import { sql } from 'kysely';
import { ROLES, type Role } from '../../platform/access/roles.js';
import type { Db } from '../../platform/db/database.js';

/** The roles of issue 32, by name; an identity provider's group grants one of them (single sign-on). */
export const ORGANIZATION_ROLES = ['owner', 'admin', 'deployer', 'developer', 'viewer'] as const satisfies readonly Role[];
export type OrganizationRole = (typeof ORGANIZATION_ROLES)[number];

const rankOf = (role: Role) => ROLES.indexOf(role);

/**
 * Applies a role granted from outside (an identity provider's group claim, at each sign-in):
 * makes the user a member with that role, or raises an existing membership to it; never lowers
 * one (an organization admin's own choice stands). A membership it makes records the issuer, so
 * that issuer may lower or remove it once the group is gone ({@link withdrawUngrantedRoles}); one
 * people made and a group raised keeps no issuer: the raise stays, the membership is never removed.
 * Takes `db` so the sign-in's transaction holds it.
 */
export async function grantRole(db: Db, organizationId: string, userId: string, role: OrganizationRole, issuerId: string | null = null) {
  // ROLES lists the roles lowest first: the higher position wins.
  const rank = (value: ReturnType<typeof sql>) => sql<number>`array_position(${sql.val([...ROLES])}::text[], ${value})`;
  const raises = sql<boolean>`${rank(sql`excluded.role`)} > ${rank(sql`memberships.role`)}`;
  await db
    .insertInto('memberships')
    .values({ organization_id: organizationId, user_id: userId, role, sso_issuer_id: issuerId })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'user_id']).doUpdateSet({
        role: sql<Role>`CASE WHEN ${raises} THEN excluded.role ELSE memberships.role END`,
        // A membership people made stays theirs when a group raises it (withdrawing the group must not remove it).
        sso_issuer_id: sql<
          string | null
        >`CASE WHEN ${raises} AND memberships.sso_issuer_id IS NOT NULL THEN excluded.sso_issuer_id ELSE memberships.sso_issuer_id END`,
      }),
    )
    .execute();
}

/**
 * At a sign-in through an issuer, the memberships that issuer's groups granted follow the groups
 * the person has now: lowered to the highest role still mapped for the organization, removed
 * when none is (their environment grants with them). Memberships people chose are left alone;
 * an owner the last-owner rule protects stays. Returns what changed (`org-id:role`, or
 * `org-id:removed`, or `org-id:kept-last-owner`) for the sign-in's audit row.
 */
export async function withdrawUngrantedRoles(
  db: Db,
  issuerId: string,
  userId: string,
  mappings: ReadonlyArray<{ organization_id: string; role: string }>,
): Promise<string[]> {
  const granted = await db
    .selectFrom('memberships')
    .select(['organization_id', 'role'])
    .where('user_id', '=', userId)
    .where('sso_issuer_id', '=', issuerId)
    .execute();
  const changes: string[] = [];
  for (const membership of granted) {
    const mapped = mappings
      .filter((m) => m.organization_id === membership.organization_id)
      .map((m) => m.role as Role)
      .sort((a, b) => rankOf(b) - rankOf(a))[0];
    if (mapped && rankOf(mapped) >= rankOf(membership.role)) continue;
    const org = membership.organization_id;
    // The organization's memberships locked, as every membership change does (no owner-less organization).
    const members = await db.selectFrom('memberships').select(['user_id', 'role']).where('organization_id', '=', org).forUpdate().execute();
    const current = members.find((m) => m.user_id === userId);
    if (!current) continue;
    if (current.role === 'owner' && members.filter((m) => m.role === 'owner').length <= 1) {
      changes.push(`${org}:kept-last-owner`);
      continue;
    }
    if (mapped) {
      await db.updateTable('memberships').set({ role: mapped }).where('organization_id', '=', org).where('user_id', '=', userId).execute();
      changes.push(`${org}:${mapped}`);
    } else {
      await db.deleteFrom('memberships').where('organization_id', '=', org).where('user_id', '=', userId).execute();
      await db
        .deleteFrom('environment_grants')
        .where('user_id', '=', userId)
        .where('environment_id', 'in', (eb) =>
          eb
            .selectFrom('environments as e')
            .innerJoin('projects as p', 'p.id', 'e.project_id')
            .select('e.id')
            .where('p.organization_id', '=', org),
        )
        .execute();
      changes.push(`${org}:removed`);
    }
  }
  return changes;
}
