import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export class WorkspacesRepository {
  constructor(private readonly db: Db) {}

  private withCounts() {
    return this.db
      .selectFrom('organizations as o')
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
          .as('service_count'),
      ]);
  }

  listForUser(userId: string) {
    return this.withCounts()
      .innerJoin('memberships as mine', (j) => j.onRef('mine.organization_id', '=', 'o.id').on('mine.user_id', '=', userId))
      .orderBy('o.name')
      .execute();
  }

  findById(id: string) {
    return this.withCounts().where('o.id', '=', id).executeTakeFirst();
  }

  projects(organizationId: string, projectSlug?: string) {
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
          'services',
        ),
        sql<string[]>`coalesce((select array_agg(e.slug order by e.created_at) from environments e where e.project_id = p.id), '{}')`.as(
          'environments',
        ),
      ])
      .where('p.organization_id', '=', organizationId);
    if (projectSlug !== undefined) q = q.where('p.slug', '=', projectSlug);
    return q.orderBy('p.slug').execute();
  }
}
