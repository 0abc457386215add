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
    let query = this.db
      .selectFrom('app_log_lines')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', q.environmentId);
    if (q.since) query = query.where('logged_at', '>=', q.since);
    if (q.until) query = query.where('logged_at', '<', q.until);
    if (q.process) query = query.where('process_type', '=', q.process);
    if (q.search) query = query.where(sql<boolean>`line ILIKE ${likePattern(q.search)}`);
    const rows = await query.orderBy('id', 'desc').limit(q.limit).execute();
    return rows.reverse();
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
