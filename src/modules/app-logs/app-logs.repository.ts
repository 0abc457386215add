import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export interface NewLogLine {
  application_id: string;
  environment_id: string;
  instance_id: string;
  process_type: string;
  stream: 'stdout' | 'stderr';
  line: string;
  logged_at: Date;
}

export interface LogQuery {
  environmentId: string;
  since?: Date;
  until?: Date;
  process?: string;
  search?: string;
  limit: number;
}

/** Rough storage per row beyond its text (ids, times, names, index entries), for the size limit. */
const ROW_OVERHEAD_BYTES = 100;

/** How many of the newest lines a search reads in order before it turns to the trigram index. */
const RECENT_LINES_SCANNED = 5000;

const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export class AppLogsRepository {
  constructor(private readonly db: Db) {}

  /**
   * Stores lines of several applications; each application's ids are taken under its
   * sequence lock, so a stream resuming "after id N" never skips a line committed later.
   */
  async insert(lines: NewLogLine[]): Promise<string[]> {
    const byApp = new Map<string, NewLogLine[]>();
    for (const l of lines) byApp.set(l.application_id, [...(byApp.get(l.application_id) ?? []), l]);
    const apps = [...byApp.keys()].sort();
    await this.db.transaction().execute(async (trx) => {
      for (const app of apps) {
        await sql`SELECT slipway_app_sequence_lock(${app}::uuid)`.execute(trx);
        await trx.insertInto('app_log_lines').values(byApp.get(app)!).execute();
        await sql`SELECT pg_notify('slipway_app_logs', ${app})`.execute(trx);
      }
    });
    return apps;
  }

  /** The newest `limit` lines of the window, oldest first. */
  async query(applicationId: string, q: LogQuery) {
    if (!q.search)
      return (await this.window(this.db, applicationId, q).selectAll().orderBy('id', 'desc').limit(q.limit).execute()).reverse();
    const matching = sql<boolean>`line ILIKE ${likePattern(q.search)}`;
    // A search reads the newest lines in order first: a common word fills the page from them at once.
    const boundary = await this.window(this.db, applicationId, q)
      .select('id')
      .orderBy('id', 'desc')
      .offset(RECENT_LINES_SCANNED - 1)
      .limit(1)
      .executeTakeFirst();
    const recent = await this.window(this.db, applicationId, q)
      .selectAll()
      .where(matching)
      .$if(boundary !== undefined, (qb) => qb.where('id', '>=', boundary!.id))
      .orderBy('id', 'desc')
      .limit(q.limit)
      .execute();
    if (!boundary || recent.length === q.limit) return recent.reverse();
    // A rarer one: the trigram index (migration 0061) finds the older lines. PostgreSQL's estimate of how
    // often the text occurs counts every application's lines, so it would rather walk this application's
    // lines newest first, reading all of them: that plan (and a parallel one) is ruled out here.
    const older = await this.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off; SET LOCAL max_parallel_workers_per_gather = 0`.execute(
        trx,
      );
      return this.window(trx, applicationId, q)
        .selectAll()
        .where(matching)
        .where('id', '<', boundary.id)
        .orderBy('id', 'desc')
        .limit(q.limit - recent.length)
        .execute();
    });
    return [...recent, ...older].reverse();
  }

  /** The lines of one application's environment in the query's window (time, process). */
  private window(db: Db, applicationId: string, q: LogQuery) {
    let query = db.selectFrom('app_log_lines').where('application_id', '=', applicationId).where('environment_id', '=', q.environmentId);
    if (q.since) query = query.where('logged_at', '>=', q.since);
    if (q.until) query = query.where('logged_at', '<', q.until);
    if (q.process) query = query.where('process_type', '=', q.process);
    return query;
  }

  after(applicationId: string, afterId: number, process: string | undefined, limit: number) {
    let query = this.db.selectFrom('app_log_lines').selectAll().where('application_id', '=', applicationId).where('id', '>', afterId);
    if (process) query = query.where('process_type', '=', process);
    return query.orderBy('id').limit(limit).execute();
  }

  async lastId(applicationId: string): Promise<number> {
    const row = await this.db
      .selectFrom('app_log_lines')
      .select((eb) => eb.fn.max('id').as('id'))
      .where('application_id', '=', applicationId)
      .executeTakeFirst();
    return Number(row?.id ?? 0);
  }

  /** Deletes lines older than `maxAgeHours`; returns how many. */
  async deleteOlderThan(maxAgeHours: number): Promise<number> {
    const r = await this.db
      .deleteFrom('app_log_lines')
      .where('logged_at', '<', sql<Date>`now() - make_interval(hours => ${maxAgeHours})`)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  applicationsWithLogs(): Promise<string[]> {
    return this.db
      .selectFrom('app_log_lines')
      .select('application_id')
      .distinct()
      .execute()
      .then((rows) => rows.map((r) => r.application_id));
  }

  /** Rotation: keeps the newest lines of an application that fit in `maxBytes`, deletes the older ones. */
  async trimToSize(applicationId: string, maxBytes: number): Promise<number> {
    const cutoff = await sql<{ id: number }>`
      SELECT id FROM (
        SELECT id, sum(octet_length(line) + ${ROW_OVERHEAD_BYTES}) OVER (ORDER BY id DESC) AS newer_bytes
        FROM app_log_lines WHERE application_id = ${applicationId}
      ) t WHERE newer_bytes > ${maxBytes} ORDER BY id DESC LIMIT 1`.execute(this.db);
    const id = cutoff.rows[0]?.id;
    if (id === undefined) return 0;
    const r = await this.db
      .deleteFrom('app_log_lines')
      .where('application_id', '=', applicationId)
      .where('id', '<=', Number(id))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
