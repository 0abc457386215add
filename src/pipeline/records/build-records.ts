import { sql, type Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { FailureCode } from '../../platform/failures.js';
import type { BuildRecordColumns } from '../../platform/db/schema.js';
import type { JobInput, JobKind, Jobs } from '../../platform/jobs/types.js';

/** Images and releases share their progress columns (status, built, error, log_text, job_id). */
export type BuildRecordTable = 'images' | 'releases';

function failure(detail: string, code: FailureCode) {
  return {
    status: 'error' as const,
    error: true,
    built: false,
    error_detail: detail,
    error_code: code,
    finished_at: sql<Date>`now()`,
    updated_at: sql<Date>`now()`,
    log_text: sql<string>`log_text || ${`${detail}\n`}`,
  };
}

// Both tables have the columns used here; typing against one of them keeps Kysely's checks.
const table = (db: Db, name: BuildRecordTable) => db.updateTable(name as 'images');

/** Fails a record still in progress (never overwrites a finished one). */
export async function failIfBuilding(db: Db, name: BuildRecordTable, id: string, detail: string, code: FailureCode): Promise<boolean> {
  const res = await table(db, name).set(failure(detail, code)).where('id', '=', id).where('status', '=', 'building').executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/**
 * Fails records still `building` whose job is not waiting or running any more (never
 * queued, or finished without settling them), once older than `graceSeconds`.
 */
export async function settleAbandoned(
  db: Db,
  name: BuildRecordTable,
  liveJobIds: Set<string>,
  detail: string,
  graceSeconds = 120,
): Promise<number> {
  let query = table(db, name)
    .set(failure(detail, 'abandoned'))
    .where('status', '=', 'building')
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${graceSeconds})`);
  if (liveJobIds.size > 0) query = query.where((eb) => eb.or([eb('job_id', 'is', null), eb('job_id', 'not in', [...liveJobIds])]));
  const res = await query.executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/**
 * Queues the job that fills a new record and stores its id on the record; a record whose
 * job could not be queued fails at once (`could not queue the <what>`) instead of waiting
 * for the sweeper.
 */
export async function queueRecordJob(
  db: Db,
  name: BuildRecordTable,
  jobs: Jobs,
  kind: JobKind,
  data: JobInput & { recordId: string },
  what: string,
): Promise<string> {
  try {
    const jobId = await jobs.enqueue(kind, data);
    await table(db, name)
      .set({ job_id: jobId, updated_at: sql`now()` })
      .where('id', '=', data.recordId)
      .execute();
    return jobId;
  } catch (err) {
    await failIfBuilding(db, name, data.recordId, `could not queue the ${what}`, 'internal_error');
    throw err;
  }
}

/** The `/log` view of an image or release. */
export function recordLogView(r: Selectable<BuildRecordColumns>) {
  return {
    status: r.status,
    version: r.version,
    log_text: r.log_text,
    error: r.error,
    error_detail: r.error_detail,
    error_code: r.error_code,
    build_step: r.build_step,
  };
}
