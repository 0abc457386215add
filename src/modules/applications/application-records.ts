import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

/** Sets process counts of an application (its production counts), keeping the other types'; in the caller's transaction when given one. */
export async function mergeProcessCounts(db: Db, applicationId: string, counts: Record<string, number>): Promise<void> {
  await db
    .updateTable('applications')
    .set({ process_counts: sql`process_counts || ${JSON.stringify(counts)}::jsonb`, updated_at: sql`now()` })
    .where('id', '=', applicationId)
    .execute();
}
