import { sql, type Updateable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { OneOffRunsTable } from '../../platform/db/schema.js';
import type { FailureCode } from '../../platform/failures.js';

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
  async failIfUnfinished(id: string, detail: string, code: FailureCode): Promise<boolean> {
    const r = await this.db
      .updateTable('one_off_runs')
      .set({
        status: 'failed',
        error_detail: detail,
        error_code: code,
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

  /** How many runs an application, or one of its cron entries, has had. */
  async count(of: RunsOf): Promise<number> {
    const r = await this.db
      .selectFrom('one_off_runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(ownerColumn(of), '=', ownerId(of))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** A page of those runs, newest first. */
  page(of: RunsOf, limit: number, offset: number) {
    return this.db
      .selectFrom('one_off_runs')
      .selectAll()
      .where(ownerColumn(of), '=', ownerId(of))
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute();
  }
}

/** Whose runs a list reads: an application's, or one cron entry's. */
export type RunsOf = { applicationId: string } | { cronEntryId: string };

const ownerColumn = (of: RunsOf) => ('cronEntryId' in of ? 'cron_entry_id' : 'application_id');
const ownerId = (of: RunsOf) => ('cronEntryId' in of ? of.cronEntryId : of.applicationId);
