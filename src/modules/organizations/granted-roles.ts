import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

/** The roles of issue 32, by name; an identity provider's group grants one of them (single sign-on). */
export const ORGANIZATION_ROLES = ['owner', 'admin', 'deployer', 'developer', 'viewer'] as const;
export type OrganizationRole = (typeof ORGANIZATION_ROLES)[number];

/** Roles that administer the organization while memberships only know `admin` (owner and admin do). */
const ADMINISTERING: ReadonlySet<string> = new Set(['owner', 'admin']);

/**
 * Applies a role granted from outside (an identity provider's group claim, at each sign-in):
 * makes the user a member with that role, or raises an existing membership to it; never lowers
 * one (an organization admin's own choice stands). Takes `db` so the sign-in's transaction holds it.
 * Memberships still store an admin flag: owner and admin are admins, the other roles members.
 */
export async function grantRole(db: Db, organizationId: string, userId: string, role: OrganizationRole) {
  const admin = ADMINISTERING.has(role);
  await db
    .insertInto('memberships')
    .values({ organization_id: organizationId, user_id: userId, admin })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id']).doUpdateSet({ admin: sql<boolean>`memberships.admin OR ${admin}` }))
    .execute();
}
