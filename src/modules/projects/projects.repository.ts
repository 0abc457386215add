import { sql } from 'kysely';
import { createProductionEnvironment } from '../../platform/environments/index.js';
import type { Db } from '../../platform/db/database.js';
import { deleteScopeVariables } from '../configurations/index.js';

export class ProjectsRepository {
  constructor(private readonly db: Db) {}

  private withCounts() {
    return this.db
      .selectFrom('projects as p')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .select((eb) => [
        'p.id',
        'p.name',
        'p.slug',
        'p.organization_id',
        'p.created_at',
        'p.updated_at',
        'o.slug as organization_slug',
        'o.name as organization_name',
        eb
          .selectFrom('applications as a')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('a.project_id', '=', 'p.id')
          .as('application_count'),
      ]);
  }

  /** The projects of the user's organizations (of one, by slug), by organization and project slug; a window of them. */
  listForUser(userId: string, organizationSlug?: string, window?: { limit: number; offset: number }) {
    return this.withCounts()
      .innerJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
      .$if(organizationSlug !== undefined, (q) => q.where('o.slug', '=', organizationSlug!))
      .orderBy('o.slug')
      .orderBy('p.slug')
      .$if(window !== undefined, (q) => q.limit(window!.limit).offset(window!.offset))
      .execute();
  }

  /**
   * The whole list as the JSON array the API answers (ProjectSummary, in listForUser's order), built by
   * PostgreSQL: an installation's thousand projects were ≈ 25 ms of the server's CPU to parse into rows,
   * turn dates into strings and serialize again (issue 35); `created` as `iso()` writes it (milliseconds, Z).
   */
  async listJsonForUser(userId: string, organizationSlug?: string): Promise<string> {
    const { rows } = await sql<{ list: string }>`
      SELECT coalesce(json_agg(json_build_object(
               'id', p.id, 'name', p.name, 'slug', p.slug, 'organization_id', p.organization_id, 'organization_slug', o.slug,
               'application_count', (SELECT count(*) FROM applications a WHERE a.project_id = p.id),
               'created', to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             ORDER BY o.slug, p.slug), '[]')::text AS list
      FROM projects p
      JOIN organizations o ON o.id = p.organization_id
      JOIN memberships m ON m.organization_id = p.organization_id AND m.user_id = ${userId}
      WHERE ${organizationSlug === undefined ? sql`true` : sql`o.slug = ${organizationSlug}`}`.execute(this.db);
    return rows[0]!.list;
  }

  /** The project without its application count: what a request inside the project needs (counting is O(applications)). */
  findRefBySlugs(orgSlug: string, projectSlug: string) {
    return this.db
      .selectFrom('projects as p')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .select(['p.id', 'p.name', 'p.slug', 'p.organization_id', 'o.slug as organization_slug'])
      .where('o.slug', '=', orgSlug)
      .where('p.slug', '=', projectSlug)
      .executeTakeFirst();
  }

  findBySlugs(orgSlug: string, projectSlug: string) {
    return this.withCounts().where('o.slug', '=', orgSlug).where('p.slug', '=', projectSlug).executeTakeFirst();
  }

  findById(id: string) {
    return this.withCounts().where('p.id', '=', id).executeTakeFirst();
  }

  /**
   * An organization's projects (or the one of `projectSlug`), by slug, each with its team's slug
   * and the slugs of its applications (by slug) and environments (oldest first).
   */
  listWithTeams(organizationId: string, projectSlug?: string) {
    let q = this.db
      .selectFrom('projects as p')
      .leftJoin('teams as t', 't.id', 'p.team_id')
      .select([
        'p.id',
        'p.name',
        'p.slug',
        'p.created_at',
        'p.updated_at',
        't.slug as team',
        sql<string[]>`coalesce((select array_agg(a.slug order by a.slug) from applications a where a.project_id = p.id), '{}')`.as(
          'applications',
        ),
        sql<string[]>`coalesce((select array_agg(e.slug order by e.created_at) from environments e where e.project_id = p.id), '{}')`.as(
          'environments',
        ),
      ])
      .where('p.organization_id', '=', organizationId);
    if (projectSlug !== undefined) q = q.where('p.slug', '=', projectSlug);
    return q.orderBy('p.slug').execute();
  }

  /** Renames a project or moves it into (or out of) a team. */
  async update(projectId: string, changes: { name?: string; team_id?: string | null }) {
    await this.db
      .updateTable('projects')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', projectId)
      .execute();
  }

  /**
   * Deletes a project that has no application, with its own and its environments' configuration
   * (environments, preview settings and webhooks go by cascade). False while an application
   * remains: its instances and records are not deleted from here.
   */
  deleteIfEmpty(projectId: string) {
    return this.db.transaction().execute(async (trx) => {
      await trx.selectFrom('projects').select('id').where('id', '=', projectId).forUpdate().execute();
      const app = await trx.selectFrom('applications').select('id').where('project_id', '=', projectId).executeTakeFirst();
      if (app) return false;
      const environments = await trx.selectFrom('environments').select('id').where('project_id', '=', projectId).execute();
      for (const env of environments) await deleteScopeVariables(trx, { scope: 'environment', scopeId: env.id });
      await deleteScopeVariables(trx, { scope: 'project', scopeId: projectId });
      await trx.deleteFrom('projects').where('id', '=', projectId).execute();
      return true;
    });
  }

  /** A project starts with its `production` environment. */
  insert(project: { id: string; organization_id: string; name: string; slug: string }) {
    return this.db.transaction().execute(async (trx) => {
      const created = await trx.insertInto('projects').values(project).returning('id').executeTakeFirstOrThrow();
      await createProductionEnvironment(trx, created.id);
      return created;
    });
  }
}
