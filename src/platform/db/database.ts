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

/** SQL texts run as named prepared statements: parsed (and, once PostgreSQL settles on it, planned) once per connection. */
const preparedNames = new Map<string, string>();

/**
 * Marks a query text as worth preparing on every connection: for the few hottest reads, whose
 * parse and plan were a large share of PostgreSQL's CPU per request (bench/README.md). The set is
 * bounded by the code (precompiled queries), never by request data.
 */
export function prepareOnEveryConnection(text: string): void {
  if (!preparedNames.has(text)) preparedNames.set(text, `slipway_${preparedNames.size + 1}`);
}

/** node-postgres's client, naming the statements marked above (node-postgres then prepares each once per connection). */
class PreparingClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    const name = typeof text === 'string' && Array.isArray(values) ? preparedNames.get(text) : undefined;
    const call = super.query as (...a: unknown[]) => never;
    return name ? call.call(this, { name, text, values }, callback) : call.apply(this, args);
  }
}

export function createDb(connectionString: string, maxConnections = 10): Db {
  const pool = new pg.Pool({ connectionString, max: maxConnections, Client: PreparingClient });
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
