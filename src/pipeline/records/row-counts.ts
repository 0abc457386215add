import type { Db } from '../../platform/db/database.js';

/**
 * The total of an application's images, releases or deployments (in one environment, or in all of
 * them when `environmentId` is null), read from the counts triggers keep (migration 0019) instead of
 * counting the rows: page 1 of a list costs the same at 10^2 and 10^5 rows.
 */
export async function countRows(
  db: Db,
  table: 'images' | 'releases' | 'deployments',
  applicationId: string,
  environmentId: string | null = null,
): Promise<number> {
  let query = db
    .selectFrom('row_counts')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('n'), eb.lit(0)).as('n'))
    .where('table_name', '=', table)
    .where('application_id', '=', applicationId);
  if (environmentId) query = query.where('environment_id', '=', environmentId);
  return Number((await query.executeTakeFirstOrThrow()).n);
}
