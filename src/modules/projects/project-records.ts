import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

/** Renames a project or moves it into (or out of) a team: the workspace view's edit, authorized by its caller. */
export async function updateProjectRecord(db: Db, projectId: string, changes: { name?: string; team_id?: string | null }) {
  await db
    .updateTable('projects')
    .set({ ...changes, updated_at: sql`now()` })
    .where('id', '=', projectId)
    .execute();
}
