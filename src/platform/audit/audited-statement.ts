import { sql, type RawBuilder } from 'kysely';
import { prepareOnEveryConnection, type Db } from '../db/database.js';
import { auditInsertWhen } from './audit-row.js';
import { currentAudit } from './request-audit.js';

/**
 * What a change's statement adds when it writes its request's audit row itself: `cte` goes after
 * the change's own CTEs (it starts with a comma), `id` after the final select's columns (also with
 * its comma, naming the column `audit_row_id`).
 */
export interface AuditRowParts {
  cte: RawBuilder<unknown>;
  id: RawBuilder<unknown>;
}

/**
 * Runs one statement that changes data and, when the current request still needs its audit row,
 * writes that row in the same statement (a CTE after the change, written only when the CTE named
 * `changed` returned rows): one round trip where the auditing driver makes four (begin, the row,
 * the change, commit), and the row is atomic with the change as before (issue 35).
 * `build(null)` must be a statement the auditing driver recognizes as a write (it then audits it
 * as any other); that path serves a caller's transaction, where a rollback must take the row back.
 * Prepared on every connection: the texts are bounded by the code (the routes' audit lookups).
 */
export async function executeAudited<R extends object>(
  db: Db,
  changed: string,
  build: (audit: AuditRowParts | null) => RawBuilder<R>,
): Promise<R[]> {
  const audit = currentAudit();
  const fold = audit?.wantsRow && !db.isTransaction ? audit : null;
  if (!fold) return run(db, build(null));
  // Claimed before the statement runs, so the driver does not write a second row for it.
  fold.claimed = true;
  try {
    const when = sql`EXISTS (SELECT 1 FROM ${sql.table(changed)})`;
    const parts = { cte: sql`, audit_row AS (${auditInsertWhen(fold, when)})`, id: sql`, (SELECT id FROM audit_row) AS audit_row_id` };
    const rows = await run(db, build(parts).$castTo<R & { audit_row_id?: number | null }>());
    const id = rows[0]?.audit_row_id;
    if (id === undefined || id === null) {
      fold.claimed = false;
      fold.rowId = null;
    } else fold.rowId = Number(id);
    return rows.map(({ audit_row_id: _id, ...row }) => row as unknown as R);
  } catch (err) {
    fold.claimed = false;
    fold.rowId = null;
    throw err;
  }
}

async function run<R>(db: Db, statement: RawBuilder<R>): Promise<R[]> {
  const compiled = statement.compile(db);
  prepareOnEveryConnection(compiled.sql);
  return (await db.executeQuery(compiled)).rows;
}
