import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { Jobs } from '../../platform/jobs/index.js';
import { RECONCILE_JOB } from '../../platform/jobs/index.js';

/**
 * Queues a `reconcile` of every service deployed in the environment: once the environment is
 * deleted or stopped it has no deploy target, so the reconcile stops its instances (through
 * the queue, so it never races a deployment of the same service).
 */
async function stopServices(db: Db, jobs: Jobs | undefined, environmentId: string) {
  if (!jobs) return;
  const deployed = await db
    .selectFrom('deployments')
    .select('application_id')
    .distinct()
    .where('environment_id', '=', environmentId)
    .execute();
  for (const { application_id } of deployed) await jobs.enqueue(RECONCILE_JOB, { applicationId: application_id, environmentId });
}

/**
 * Deletes an environment (through the API, or a closed pull request's preview): it disappears
 * from the project at once and its instances stop; its records and logs stay readable until
 * the retention sweep (`sweepDeletedEnvironments`) removes it with them.
 */
export async function deleteEnvironment(db: Db, jobs: Jobs | undefined, environmentId: string): Promise<void> {
  await db
    .updateTable('environments')
    .set({ deleted_at: sql`now()`, updated_at: sql`now()`, auto_deploy_branch: null })
    .where('id', '=', environmentId)
    .where('deleted_at', 'is', null)
    .execute();
  await stopServices(db, jobs, environmentId);
}

/** Stops what an environment runs but keeps it (a preview past its project's cap). */
export async function stopEnvironment(db: Db, jobs: Jobs | undefined, environmentId: string): Promise<void> {
  await db
    .updateTable('environments')
    .set({ stopped_at: sql`now()` })
    .where('id', '=', environmentId)
    .execute();
  await stopServices(db, jobs, environmentId);
}

/** Removes environments deleted more than `retentionHours` ago, with their records (cascade). */
export async function sweepDeletedEnvironments(db: Db, retentionHours: number): Promise<number> {
  const removed = await db
    .deleteFrom('environments')
    .where('deleted_at', '<', sql<Date>`now() - make_interval(hours => ${retentionHours})`)
    .executeTakeFirst();
  return Number(removed.numDeletedRows);
}
