import { sql, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { EnvironmentsTable } from '../../platform/db/schema.js';

export class EnvironmentsRepository {
  constructor(private readonly db: Db) {}

  list(projectId: string) {
    return this.db
      .selectFrom('environments')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('slug')
      .execute();
  }

  findById(id: string) {
    return this.db.selectFrom('environments').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findBySlug(projectId: string, slug: string) {
    return this.db.selectFrom('environments').selectAll().where('project_id', '=', projectId).where('slug', '=', slug).executeTakeFirst();
  }

  insert(env: {
    id: string;
    project_id: string;
    name: string;
    slug: string;
    env_type: EnvironmentsTable['env_type'];
    auto_deploy_branch: string | null;
    protected: boolean;
  }) {
    return this.db.insertInto('environments').values(env).returningAll().executeTakeFirstOrThrow();
  }

  update(id: string, changes: Updateable<EnvironmentsTable>) {
    return this.db
      .updateTable('environments')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** The project's services with their own process settings. */
  services(projectId: string) {
    return this.db
      .selectFrom('applications')
      .select(['id', 'slug', 'process_counts', 'process_pod_classes'])
      .where('project_id', '=', projectId)
      .orderBy('slug')
      .execute();
  }

  overrides(environmentId: string) {
    return this.db.selectFrom('environment_services').selectAll().where('environment_id', '=', environmentId).execute();
  }

  /** Merges into the stored overrides in one statement; a null entry removes that override. */
  mergeOverrides(
    environmentId: string,
    applicationId: string,
    counts: Record<string, number | null>,
    podClasses: Record<string, string | null>,
  ) {
    const c = JSON.stringify(counts);
    const p = JSON.stringify(podClasses);
    return this.db
      .insertInto('environment_services')
      .values({
        environment_id: environmentId,
        application_id: applicationId,
        process_counts: sql`jsonb_strip_nulls(${c}::jsonb)`,
        process_pod_classes: sql`jsonb_strip_nulls(${p}::jsonb)`,
      })
      .onConflict((oc) =>
        oc.columns(['environment_id', 'application_id']).doUpdateSet({
          process_counts: sql`jsonb_strip_nulls(environment_services.process_counts || ${c}::jsonb)`,
          process_pod_classes: sql`jsonb_strip_nulls(environment_services.process_pod_classes || ${p}::jsonb)`,
          updated_at: sql`now()`,
        }),
      )
      .execute();
  }

  /** Of the given services, those with a complete deployment in the environment. */
  async deployedServices(environmentId: string, applicationIds: string[]): Promise<string[]> {
    const rows = await this.db
      .selectFrom('deployments')
      .select('application_id')
      .distinct()
      .where('environment_id', '=', environmentId)
      .where('application_id', 'in', applicationIds)
      .where('status', '=', 'complete')
      .execute();
    return rows.map((r) => r.application_id);
  }
}
