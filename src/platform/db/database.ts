import { Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { AuditingPostgresDialect } from '../audit/auditing-dialect.js';

// COUNT(*) and bigint columns arrive as strings by default; our counts fit in a double.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Kysely<Database>;

export function createDb(connectionString: string, maxConnections = 10): Db {
  const pool = new pg.Pool({ connectionString, max: maxConnections });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  // Changing API requests get their audit row in the transaction of their change (platform/audit/).
  return new Kysely<Database>({ dialect: new AuditingPostgresDialect({ pool }) });
}

export async function isDatabaseUp(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}
