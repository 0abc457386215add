import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';

// Writes of environment records that other features make (previews, the autoscaler), each in
// the caller's transaction when given one: the environments module stays the only writer.

/** A new preview environment of a project; its id. */
export async function insertPreviewEnvironment(db: Db, input: { projectId: string; slug: string; name: string }): Promise<string> {
  const id = uuidv7();
  await db
    .insertInto('environments')
    .values({
      id,
      project_id: input.projectId,
      name: input.name,
      slug: input.slug,
      env_type: 'preview',
      auto_deploy_branch: null,
      protected: false,
    })
    .execute();
  return id;
}

/** Gives an environment the per-service process settings of another (a preview from its template). */
export async function copyServiceSettings(db: Db, fromEnvironmentId: string, toEnvironmentId: string): Promise<void> {
  await db
    .insertInto('environment_services')
    .columns(['environment_id', 'application_id', 'process_counts', 'process_pod_classes'])
    .expression((eb) =>
      eb
        .selectFrom('environment_services')
        .select((s) => [s.val(toEnvironmentId).as('environment_id'), 'application_id', 'process_counts', 'process_pod_classes'])
        .where('environment_id', '=', fromEnvironmentId),
    )
    .execute();
}

/** Brings back a deleted (or stopped) environment: its retained records join the new ones. */
export async function reviveEnvironment(db: Db, environmentId: string): Promise<void> {
  await db
    .updateTable('environments')
    .set({ deleted_at: null, stopped_at: null, updated_at: sql`now()` })
    .where('id', '=', environmentId)
    .execute();
}

/** Lets a stopped environment run again. */
export async function resumeEnvironment(db: Db, environmentId: string): Promise<void> {
  await db.updateTable('environments').set({ stopped_at: null }).where('id', '=', environmentId).execute();
}

/** Sets process counts of one application in a (non-production) environment, keeping the other types'. */
export async function mergeServiceProcessCounts(
  db: Db,
  environmentId: string,
  applicationId: string,
  counts: Record<string, number>,
): Promise<void> {
  const json = JSON.stringify(counts);
  await db
    .insertInto('environment_services')
    .values({
      environment_id: environmentId,
      application_id: applicationId,
      process_counts: sql`${json}::jsonb`,
      process_pod_classes: sql`'{}'::jsonb`,
    })
    .onConflict((oc) =>
      oc.columns(['environment_id', 'application_id']).doUpdateSet({
        process_counts: sql`environment_services.process_counts || ${json}::jsonb`,
        updated_at: sql`now()`,
      }),
    )
    .execute();
}
