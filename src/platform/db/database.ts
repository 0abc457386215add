import { Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { AuditingPostgresDialect } from '../audit/auditing-dialect.js';
import { DatabaseAvailability } from './availability.js';

// COUNT(*) and bigint columns arrive as strings by default; our counts fit in a double.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Kysely<Database>;

/** Runs plain SQL on a database's pool, outside Kysely (and so outside request auditing). */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

const executors = new WeakMap<Db, SqlExecutor>();
const availabilities = new WeakMap<Db, DatabaseAvailability>();

/**
 * How long a request waits for a connection (a free one in the pool, or a new one) before it
 * gives up with "timeout exceeded when trying to connect" (a 503): without it, a database host
 * that stopped answering (packets dropped, not refused) would hold every request forever.
 */
const CONNECT_TIMEOUT_MS = 10_000;
/** TCP keepalive on the connections, so one whose peer vanished is found dead instead of waiting. */
const KEEPALIVE_DELAY_MS = 10_000;

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
  const availability = new DatabaseAvailability(() => pool.query('select 1'));
  /**
   * Every client listens for its own errors from birth: node-postgres emits `error` on a client
   * whose server went away (FATAL 57P01 when the postmaster dies, a reset socket), and the
   * pool's listener covers only idle clients, so a checked-out one between two queries would
   * otherwise throw from the event and end the process (issue 37). The query in flight, if
   * any, fails on its own; the pool drops the client when it is released.
   */
  class ListeningClient extends PreparingClient {
    constructor(config?: pg.ClientConfig) {
      super(config);
      this.on('error', (err) => availability.report(err));
    }
  }
  const pool = new pg.Pool({
    connectionString,
    max: maxConnections,
    Client: ListeningClient,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  });
  // An idle client losing its connection (its own listener above has reported it).
  pool.on('error', () => {});
  // A new connection is proof the database answers again.
  pool.on('connect', () => availability.markUp());
  // Changing API requests get their audit row in the transaction of their change (platform/audit/).
  const db = new Kysely<Database>({ dialect: new AuditingPostgresDialect({ pool }) });
  executors.set(db, { executeSql: (text, values) => pool.query(text, values) });
  availabilities.set(db, availability);
  // Destroying the database stops the probe too (tests and one-shot tools end cleanly).
  const destroy = db.destroy.bind(db);
  db.destroy = async () => {
    availability.close();
    await destroy();
  };
  return db;
}

/** Whether `db`'s connections reach the database (see DatabaseAvailability); made by createDb. */
export function databaseAvailability(db: Db): DatabaseAvailability {
  let availability = availabilities.get(db);
  // A transaction or a database built elsewhere (tests) has none of its own: one that probes it.
  if (!availability) availabilities.set(db, (availability = new DatabaseAvailability(() => sql`select 1`.execute(db))));
  return availability;
}

/**
 * The pool behind `db` for a library that brings its own SQL (the job queue): one pool per
 * process, so the queue takes no idle connections of its own.
 */
export function sqlExecutorOf(db: Db): SqlExecutor | undefined {
  return executors.get(db);
}

/** Asks the database now (`select 1`); the answer also updates its availability. */
export async function isDatabaseUp(db: Db): Promise<boolean> {
  const availability = databaseAvailability(db);
  try {
    await sql`select 1`.execute(db);
    availability.markUp();
    return true;
  } catch (err) {
    availability.report(err);
    return false;
  }
}
