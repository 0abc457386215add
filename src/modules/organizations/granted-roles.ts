import { sql } from 'kysely';
import { ROLES, type Role } from '../../platform/access/roles.js';
import type { Db } from '../../platform/db/database.js';

/** The roles of issue 32, by name; an identity provider's group grants one of them (single sign-on). */
export const ORGANIZATION_ROLES = ['owner', 'admin', 'deployer', 'developer', 'viewer'] as const satisfies readonly Role[];
export type OrganizationRole = (typeof ORGANIZATION_ROLES)[number];

/**
 * Applies a role granted from outside (an identity provider's group claim, at each sign-in):
 * makes the user a member with that role, or raises an existing membership to it; never lowers
 * one (an organization admin's own choice stands). Takes `db` so the sign-in's transaction holds it.
 */
export async function grantRole(db: Db, organizationId: string, userId: string, role: OrganizationRole) {
  // ROLES lists the roles lowest first: the higher position wins.
  const rank = (value: ReturnType<typeof sql>) => sql<number>`array_position(${sql.val([...ROLES])}::text[], ${value})`;
  await db
    .insertInto('memberships')
    .values({ organization_id: organizationId, user_id: userId, role })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'user_id']).doUpdateSet({
        role: sql<Role>`CASE WHEN ${rank(sql`excluded.role`)} > ${rank(sql`memberships.role`)} THEN excluded.role ELSE memberships.role END`,
      }),
    )
    .execute();
}
