import { Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { AuditingPostgresDialect } from '../audit/auditing-dialect.js';

// COUNT(*) and bigint columns arrive as strings by default; our counts fit in a double.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Kysely<Database>;

/** Runs plain SQL on a database's pool, outside Kysely (and so outside request auditing). */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

const executors = new WeakMap<Db, SqlExecutor>();

export function createDb(connectionString: string, maxConnections = 10): Db {
  const pool = new pg.Pool({ connectionString, max: maxConnections });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  // Changing API requests get their audit row in the transaction of their change (platform/audit/).
  const db = new Kysely<Database>({ dialect: new AuditingPostgresDialect({ pool }) });
  executors.set(db, { executeSql: (text, values) => pool.query(text, values) });
  return db;
}

/**
 * The pool behind `db` for a library that brings its own SQL (the job queue): one pool per
 * process, so the queue takes no idle connections of its own.
 */
export function sqlExecutorOf(db: Db): SqlExecutor | undefined {
  return executors.get(db);
}

export async function isDatabaseUp(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}
