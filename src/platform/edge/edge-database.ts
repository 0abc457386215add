import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from '../db/schema.js';
import type { Db } from '../db/database.js';

// As in createDb: counts and bigint columns as numbers (the route version).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/**
 * A client that never takes its process down: a connection lost while checked out (the
 * postmaster killed, a failover) emits `error` on the client, which with no listener is an
 * uncaught exception. The query in flight still fails with that error; the pool drops the client.
 */
class TolerantClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => {});
  }
}

/**
 * The edge process's database: a small pool whose failures only fail the query at hand (the
 * edge keeps serving what it has and tries again), with a bounded connect time so a sync never
 * hangs on a database that does not answer.
 */
export function createEdgeDb(connectionString: string): Db {
  const pool = new pg.Pool({ connectionString, max: 4, Client: TolerantClient, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {}); // an idle client's lost connection: the pool replaces it
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
