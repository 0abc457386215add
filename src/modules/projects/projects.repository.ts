import { createProductionEnvironment } from '../../platform/environments/index.js';
import type { Db } from '../../platform/db/database.js';

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

  listForUser(userId: string) {
    return this.withCounts()
      .innerJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
      .orderBy('o.slug')
      .orderBy('p.slug')
      .execute();
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

  /** A project starts with its `production` environment. */
  insert(project: { id: string; organization_id: string; name: string; slug: string }) {
    return this.db.transaction().execute(async (trx) => {
      const created = await trx.insertInto('projects').values(project).returning('id').executeTakeFirstOrThrow();
      await createProductionEnvironment(trx, created.id);
      return created;
    });
  }
}
