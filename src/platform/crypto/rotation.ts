import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { SecretBox } from './secret-box.js';

/**
 * Every column that holds values sealed by the SecretBox, keyed by the row's `id`.
 * A module that stores sealed values adds its column here, so `secrets rotate`
 * (src/admin/main.ts, `npm run admin -- secrets rotate`) re-seals it too.
 */
export interface SealedColumn {
  table: string;
  column: string;
}

const SEALED_COLUMNS: SealedColumn[] = [
  { table: 'config_vars', column: 'value_sealed' },
  { table: 'releases', column: 'configuration_sealed' },
  { table: 'addons', column: 'credentials_sealed' },
  { table: 'oidc_issuers', column: 'client_secret_sealed' },
];

/** A value no configured key opens: nothing is changed for it, and rotation stops. */
export class RotationError extends Error {}

export interface RotationResult extends SealedColumn {
  resealed: number;
  total: number;
}

/**
 * Re-seals every value still sealed under an older key with the current key. Each row is
 * updated only if it still holds the value that was read, so a concurrent write wins.
 */
export async function resealAll(db: Db, secrets: SecretBox, columns: SealedColumn[] = SEALED_COLUMNS): Promise<RotationResult[]> {
  const results: RotationResult[] = [];
  for (const { table, column } of columns) {
    // A column whose migration has not run here (yet) holds nothing to re-seal.
    const present = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.columns
      where table_schema = current_schema() and table_name = ${table} and column_name = ${column}`.execute(db);
    if (!present.rows[0]?.n) continue;
    const { rows } = await sql<{ id: string; sealed: string }>`
      select id, ${sql.ref(column)} as sealed from ${sql.table(table)} where ${sql.ref(column)} is not null`.execute(db);
    let resealed = 0;
    for (const row of rows) {
      if (secrets.isCurrent(row.sealed)) continue;
      let plain: string;
      try {
        plain = secrets.open(row.sealed);
      } catch (err) {
        throw new RotationError(`${table}.${column} of row ${row.id}: ${(err as Error).message}`);
      }
      const fresh = secrets.seal(plain);
      const res = await sql`
        update ${sql.table(table)} set ${sql.ref(column)} = ${fresh}
        where id = ${row.id} and ${sql.ref(column)} = ${row.sealed}`.execute(db);
      resealed += Number(res.numAffectedRows ?? 0);
    }
    results.push({ table, column, resealed, total: rows.length });
  }
  return results;
}
