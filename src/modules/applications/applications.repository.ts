import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { precompiled } from '../../platform/db/precompiled.js';
import type { ApplicationsTable } from '../../platform/db/schema.js';
import type { Updateable } from 'kysely';

export class ApplicationsRepository {
  constructor(private readonly db: Db) {
    this.bySlugsForUser = bySlugsForUserQuery(db);
    this.byIdForUser = precompiled(db, ['id', 'userId'], ({ id, userId }: { id: string; userId: string }) =>
      this.withOwners()
        .select((eb) =>
          eb
            .exists(
              eb
                .selectFrom('memberships as m')
                .select('m.user_id')
                .whereRef('m.organization_id', '=', 'o.id')
                .where('m.user_id', '=', userId),
            )
            .as('is_member'),
        )
        .where('a.id', '=', id),
    );
  }

  private withOwners() {
    return this.db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .selectAll('a')
      .select(['p.slug as project_slug', 'o.slug as organization_slug', 'o.id as organization_id']);
  }

  findById(id: string) {
    return this.withOwners().where('a.id', '=', id).executeTakeFirst();
  }

  /** The application with whether `userId` is a member of its organization: one round trip per request. */
  async findByIdForUser(id: string, userId: string) {
    const [row] = await this.byIdForUser({ id, userId });
    return row;
  }

  /**
   * The application by its slugs, with each level resolved in the same query (null when it
   * does not exist) and the caller's membership, so callers answer 404/403 in the
   * documented order with one round trip.
   */
  async findBySlugsForUser(orgSlug: string, projectSlug: string, appSlug: string, userId: string) {
    const [row] = await this.bySlugsForUser({ orgSlug, projectSlug, appSlug, userId });
    return row;
  }

  // Compiled once: the application detail's hot path.
  private readonly bySlugsForUser: ReturnType<typeof bySlugsForUserQuery>;
  // Every per-application route authorizes through this (compiled once, prepared per connection).
  private readonly byIdForUser;

  findBySlugs(orgSlug: string, projectSlug: string, appSlug: string) {
    return this.withOwners()
      .where('o.slug', '=', orgSlug)
      .where('p.slug', '=', projectSlug)
      .where('a.slug', '=', appSlug)
      .executeTakeFirst();
  }

  /** A page of the project's applications by slug (the unique (project_id, slug) index serves it at any size). */
  listByProject(projectId: string, limit: number, offset: number) {
    return this.db
      .selectFrom('applications')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('slug')
      .limit(limit)
      .offset(offset)
      .execute();
  }

  insert(app: { id: string; project_id: string; name: string; slug: string; platform: string }) {
    return this.db.insertInto('applications').values(app).returning('id').executeTakeFirstOrThrow();
  }

  updateSettings(id: string, changes: Updateable<ApplicationsTable>) {
    return this.db
      .updateTable('applications')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** Merges into the stored maps in one statement, so concurrent scales never lose each other's changes. */
  mergeScale(id: string, counts: Record<string, number>, podClasses: Record<string, string>) {
    return this.db
      .updateTable('applications')
      .set({
        process_counts: sql`process_counts || ${JSON.stringify(counts)}::jsonb`,
        process_pod_classes: sql`process_pod_classes || ${JSON.stringify(podClasses)}::jsonb`,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .execute();
  }
}

/** The application by its slugs with each level resolved (null when missing) and the caller's membership. */
function bySlugsForUserQuery(db: Db) {
  return precompiled(
    db,
    ['orgSlug', 'projectSlug', 'appSlug', 'userId'],
    ({ orgSlug, projectSlug, appSlug, userId }: { orgSlug: string; projectSlug: string; appSlug: string; userId: string }) =>
      db
        .selectFrom('organizations as o')
        .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'o.id').on('m.user_id', '=', userId))
        .leftJoin('projects as p', (j) => j.onRef('p.organization_id', '=', 'o.id').on('p.slug', '=', projectSlug))
        .leftJoin('applications as a', (j) => j.onRef('a.project_id', '=', 'p.id').on('a.slug', '=', appSlug))
        .selectAll('a')
        .select([
          'o.id as organization_id',
          'o.slug as organization_slug',
          'p.slug as project_slug',
          'm.user_id as member_id',
          'p.id as found_project_id',
        ])
        .where('o.slug', '=', orgSlug),
  );
}
