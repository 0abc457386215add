import { sql, type Selectable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { CronEntriesTable } from '../../platform/db/schema.js';

export type CronEntryRow = Selectable<CronEntriesTable>;

export class CronRepository {
  constructor(private readonly db: Db) {}

  list(applicationId: string, environmentId: string | null) {
    let q = this.db.selectFrom('cron_entries').selectAll().where('application_id', '=', applicationId);
    if (environmentId) q = q.where('environment_id', '=', environmentId);
    return q.orderBy('name').execute();
  }

  find(applicationId: string, environmentId: string, name: string) {
    return this.db
      .selectFrom('cron_entries')
      .selectAll()
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('name', '=', name)
      .executeTakeFirst();
  }

  /** Creates or replaces an entry (it becomes the API's: a later deployment's slipway.json leaves it alone). */
  upsert(values: {
    id: string;
    application_id: string;
    environment_id: string;
    name: string;
    schedule: string;
    command: string;
    process_type: string | null;
    timeout_seconds: number;
    next_run_at: Date;
  }) {
    const { id: _id, application_id: _a, environment_id: _e, name: _n, ...changes } = values;
    return this.db
      .insertInto('cron_entries')
      .values({ ...values, source: 'api' })
      .onConflict((oc) =>
        oc.columns(['application_id', 'environment_id', 'name']).doUpdateSet({ ...changes, source: 'api', updated_at: sql`now()` }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('cron_entries').where('id', '=', id).execute();
  }

  /** Entries due (or never scheduled), oldest occurrence first. */
  due(limit: number) {
    return this.db
      .selectFrom('cron_entries')
      .selectAll()
      .where((eb) => eb.or([eb('next_run_at', 'is', null), eb('next_run_at', '<=', sql<Date>`now()`)]))
      .orderBy(sql`next_run_at NULLS FIRST`)
      .limit(limit)
      .execute();
  }

  /**
   * Moves the entry's next occurrence on from the value read (compare-and-set): true for the
   * one scheduler that takes this occurrence, however many run.
   */
  async advance(id: string, from: Date | null, to: Date): Promise<boolean> {
    const r = await this.db
      .updateTable('cron_entries')
      .set({ next_run_at: to })
      .where('id', '=', id)
      .where((eb) => (from === null ? eb('next_run_at', 'is', null) : eb('next_run_at', '=', from)))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** The database's clock: every process schedules against the same time. */
  async now(): Promise<Date> {
    const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(this.db);
    return rows[0]!.now;
  }
}
