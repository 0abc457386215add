import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

/**
 * After a control-plane restore into another DATA_DIR (issue 37): the images' artifact paths,
 * recorded absolute, move from the old data directory's `images/` to the new one's, where the
 * restore put the artifacts. Returns how many images moved.
 */
export async function moveArtifactRoot(db: Db, fromDataDir: string, toDataDir: string): Promise<number> {
  const from = `${fromDataDir.replace(/\/+$/, '')}/images/`;
  const to = `${toDataDir.replace(/\/+$/, '')}/images/`;
  const result = await db
    .updateTable('images')
    .set({ artifact_path: sql<string>`${to} || substr(artifact_path, ${from.length + 1})` })
    .where(sql<boolean>`starts_with(artifact_path, ${from})`)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
