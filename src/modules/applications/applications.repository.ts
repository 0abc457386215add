import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ApplicationsTable } from '../../platform/db/schema.js';
import type { Updateable } from 'kysely';

export class ApplicationsRepository {
  constructor(private readonly db: Db) {}

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

  findBySlugs(orgSlug: string, projectSlug: string, appSlug: string) {
    return this.withOwners()
      .where('o.slug', '=', orgSlug).where('p.slug', '=', projectSlug).where('a.slug', '=', appSlug)
      .executeTakeFirst();
  }

  listByProject(projectId: string) {
    return this.db.selectFrom('applications').selectAll().where('project_id', '=', projectId).orderBy('slug').execute();
  }

  insert(app: { id: string; project_id: string; name: string; slug: string; platform: string }) {
    return this.db.insertInto('applications').values(app).returning('id').executeTakeFirstOrThrow();
  }

  updateSettings(id: string, changes: Updateable<ApplicationsTable>) {
    return this.db.updateTable('applications').set({ ...changes, updated_at: sql`now()` }).where('id', '=', id).execute();
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
