import { sql } from 'kysely';
import type { Role } from '../../platform/access/roles.js';
import type { Db } from '../../platform/db/database.js';
import { deleteScopeVariables } from '../configurations/index.js';

export class OrganizationsRepository {
  constructor(private readonly db: Db) {}

  findBySlug(slug: string) {
    return this.db.selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirst();
  }

  /** Sets the organization's own disk quota in MiB (null: the default); undefined when there is no such organization. */
  setDiskQuota(slug: string, megabytes: number | null) {
    return this.db
      .updateTable('organizations')
      .set({ disk_quota_mb: megabytes })
      .where('slug', '=', slug)
      .returning('disk_quota_mb')
      .executeTakeFirst();
  }

  /** Sets the organization's own build timeout (null: the default); undefined when there is no such organization. */
  setBuildTimeout(slug: string, seconds: number | null) {
    return this.db
      .updateTable('organizations')
      .set({ build_timeout_seconds: seconds })
      .where('slug', '=', slug)
      .returning('build_timeout_seconds')
      .executeTakeFirst();
  }

  /** Sets whether the organization's sandboxes may connect out (null: the site's setting). */
  setSandboxOutbound(slug: string, outbound: boolean | null) {
    return this.db
      .updateTable('organizations')
      .set({ sandbox_outbound: outbound })
      .where('slug', '=', slug)
      .returning('sandbox_outbound')
      .executeTakeFirst();
  }

  findById(id: string) {
    return this.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  membership(organizationId: string, userId: string) {
    return this.db
      .selectFrom('memberships')
      .select(['admin', 'role'])
      .where('organization_id', '=', organizationId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  /** The caller's organizations with counts computed from the data. */
  listForUser(userId: string) {
    return this.db
      .selectFrom('organizations as o')
      .innerJoin('memberships as mine', (j) => j.onRef('mine.organization_id', '=', 'o.id').on('mine.user_id', '=', userId))
      .select((eb) => [
        'o.id',
        'o.name',
        'o.slug',
        'o.created_at',
        'o.updated_at',
        eb
          .selectFrom('memberships as m')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('m.organization_id', '=', 'o.id')
          .as('member_count'),
        eb
          .selectFrom('projects as p')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('p.organization_id', '=', 'o.id')
          .as('project_count'),
        eb
          .selectFrom('applications as a')
          .innerJoin('projects as p', 'p.id', 'a.project_id')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('p.organization_id', '=', 'o.id')
          .as('application_count'),
      ])
      .orderBy('o.name')
      .execute();
  }

  /** Renames an organization (its slug, which paths use, stays). */
  async rename(organizationId: string, name: string) {
    await this.db
      .updateTable('organizations')
      .set({ name, updated_at: sql`now()` })
      .where('id', '=', organizationId)
      .execute();
  }

  /**
   * Deletes an organization that has no project left, with its teams' and its own configuration
   * (memberships, teams, webhooks and links go by cascade; audit rows keep their text). False
   * when a project remains: its services, instances and records are not deleted from here.
   */
  deleteIfEmpty(organizationId: string) {
    return this.db.transaction().execute(async (trx) => {
      await trx.selectFrom('organizations').select('id').where('id', '=', organizationId).forUpdate().execute();
      const project = await trx.selectFrom('projects').select('id').where('organization_id', '=', organizationId).executeTakeFirst();
      if (project) return false;
      const teams = await trx.selectFrom('teams').select('id').where('organization_id', '=', organizationId).execute();
      for (const team of teams) await deleteScopeVariables(trx, { scope: 'team', scopeId: team.id });
      await deleteScopeVariables(trx, { scope: 'organization', scopeId: organizationId });
      await trx.deleteFrom('organizations').where('id', '=', organizationId).execute();
      return true;
    });
  }

  members(organizationId: string) {
    return this.db
      .selectFrom('memberships as m')
      .innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['u.id as user_id', 'u.username', 'u.email', 'm.admin', 'm.role'])
      .where('m.organization_id', '=', organizationId)
      .orderBy('m.created_at')
      .execute();
  }

  async counts(organizationId: string) {
    const row = await this.db
      .selectNoFrom((eb) => [
        eb
          .selectFrom('projects')
          .select(eb.fn.countAll<number>().as('n'))
          .where('organization_id', '=', organizationId)
          .as('project_count'),
        eb
          .selectFrom('applications as a')
          .innerJoin('projects as p', 'p.id', 'a.project_id')
          .select(eb.fn.countAll<number>().as('n'))
          .where('p.organization_id', '=', organizationId)
          .as('application_count'),
      ])
      .executeTakeFirstOrThrow();
    return { project_count: Number(row.project_count ?? 0), application_count: Number(row.application_count ?? 0) };
  }

  /**
   * Creates the organization with its creator as admin; with `maxCreated`, only while the
   * creator has created fewer than that (checked under a lock on the creator, so two requests
   * at once cannot both pass): null when they have not.
   */
  createWithAdmin(org: { id: string; name: string; slug: string }, adminUserId: string, maxCreated?: number) {
    return this.db.transaction().execute(async (trx) => {
      if (maxCreated !== undefined) {
        await sql`SELECT pg_advisory_xact_lock(hashtext(${`slipway.orgs-created-by.${adminUserId}`}))`.execute(trx);
        const { n } = await trx
          .selectFrom('organizations')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('created_by', '=', adminUserId)
          .executeTakeFirstOrThrow();
        if (Number(n) >= maxCreated) return null;
      }
      const created = await trx
        .insertInto('organizations')
        .values({ ...org, created_by: adminUserId })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx.insertInto('memberships').values({ organization_id: org.id, user_id: adminUserId, role: 'owner' }).execute();
      return created;
    });
  }

  addMember(organizationId: string, userId: string, role: Role) {
    return this.db.insertInto('memberships').values({ organization_id: organizationId, user_id: userId, role }).execute();
  }

  /**
   * Changes one membership while holding a lock on all of the organization's memberships,
   * so two owners demoting each other at once cannot leave it without an owner.
   * `change` sees the current member and all of them, and returns the new role, or null to
   * remove the member (their grants on the organization's environments go with them).
   */
  changeMembership(
    organizationId: string,
    userId: string,
    change: (current: { role: Role }, members: Array<{ user_id: string; role: Role }>) => Role | null,
  ) {
    return this.db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('memberships')
        .select(['user_id', 'role'])
        .where('organization_id', '=', organizationId)
        .forUpdate()
        .execute();
      const current = rows.find((r) => r.user_id === userId);
      if (!current) return undefined;
      const next = change(current, rows);
      if (next === null) {
        await trx.deleteFrom('memberships').where('organization_id', '=', organizationId).where('user_id', '=', userId).execute();
        await trx
          .deleteFrom('environment_grants')
          .where('user_id', '=', userId)
          .where('environment_id', 'in', (eb) =>
            eb
              .selectFrom('environments as e')
              .innerJoin('projects as p', 'p.id', 'e.project_id')
              .select('e.id')
              .where('p.organization_id', '=', organizationId),
          )
          .execute();
      } else {
        await trx
          .updateTable('memberships')
          // A role people set stands: single sign-on no longer lowers it (granted-roles.ts).
          .set({ role: next, sso_issuer_id: null })
          .where('organization_id', '=', organizationId)
          .where('user_id', '=', userId)
          .execute();
      }
      await trx
        .updateTable('organizations')
        .set({ updated_at: sql`now()` })
        .where('id', '=', organizationId)
        .execute();
      return { role: next };
    });
  }

  setViewersSeeProtectedLogs(organizationId: string, value: boolean) {
    return this.db.updateTable('organizations').set({ viewers_see_protected_logs: value }).where('id', '=', organizationId).execute();
  }
}
