import { sql, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { OneOffRunsTable } from '../../platform/db/schema.js';

export class OneOffRunsRepository {
  constructor(private readonly db: Db) {}

  insert(values: {
    id: string;
    application_id: string;
    environment_id: string;
    release_id: string;
    command: string;
    process_type: string;
    timeout_seconds: number;
    requested_by: string;
  }) {
    return this.db.insertInto('one_off_runs').values(values).returningAll().executeTakeFirstOrThrow();
  }

  /** A cron entry's run for one occurrence; undefined when that occurrence already has its run. */
  insertScheduled(values: {
    id: string;
    application_id: string;
    environment_id: string;
    release_id: string;
    command: string;
    process_type: string;
    timeout_seconds: number;
    cron_entry_id: string;
    scheduled_for: Date;
  }) {
    return this.db
      .insertInto('one_off_runs')
      .values(values)
      .onConflict((oc) => oc.columns(['cron_entry_id', 'scheduled_for']).doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  /** The cron entry's run still pending or running, if any. */
  unfinishedOfCron(cronEntryId: string) {
    return this.db
      .selectFrom('one_off_runs')
      .selectAll()
      .where('cron_entry_id', '=', cronEntryId)
      .where('status', 'in', ['pending', 'running'])
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
  }

  async countOfCron(cronEntryId: string): Promise<number> {
    const r = await this.db
      .selectFrom('one_off_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('cron_entry_id', '=', cronEntryId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  pageOfCron(cronEntryId: string, limit: number, offset: number) {
    return this.db
      .selectFrom('one_off_runs')
      .selectAll()
      .where('cron_entry_id', '=', cronEntryId)
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
  }

  find(id: string) {
    return this.db.selectFrom('one_off_runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  update(id: string, changes: Updateable<OneOffRunsTable>) {
    return this.db
      .updateTable('one_off_runs')
      .set({ ...changes, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  /** Settles a run still pending or running (its worker died, or it could not start). */
  async failIfUnfinished(id: string, detail: string): Promise<boolean> {
    const r = await this.db
      .updateTable('one_off_runs')
      .set({
        status: 'failed',
        error_detail: detail,
        finished_at: sql`now()`,
        updated_at: sql`now()`,
        log_text: sql`log_text || ${`${new Date().toISOString()} error: ${detail}\n`}`,
      })
      .where('id', '=', id)
      .where('status', 'in', ['pending', 'running'])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  appendLog(id: string, text: string) {
    return this.db
      .updateTable('one_off_runs')
      .set({ log_text: sql`log_text || ${text}`, updated_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  async count(applicationId: string): Promise<number> {
    const r = await this.db
      .selectFrom('one_off_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('application_id', '=', applicationId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  page(applicationId: string, limit: number, offset: number) {
    return this.db
      .selectFrom('one_off_runs')
      .selectAll()
      .where('application_id', '=', applicationId)
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
  }
}
