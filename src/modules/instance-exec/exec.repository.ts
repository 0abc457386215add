import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ExecSessionsTable } from '../../platform/db/schema.js';

export type ExecSessionRow = Selectable<ExecSessionsTable>;

/** How long an opened session may wait for its WebSocket. */
export const ATTACH_WITHIN_SECONDS = 60;

/** The exec sessions (migration 0044) and the instances they enter (read only: the runtime writes those). */
export class ExecSessionsRepository {
  constructor(private readonly db: Db) {}

  /** An instance of the application's environment by id or by name (`web.1`). */
  findInstance(applicationId: string, environmentId: string, ref: string) {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref);
    const named = /^([a-z0-9][a-z0-9_-]*)\.(\d{1,6})$/i.exec(ref);
    let query = this.db
      .selectFrom('instances')
      .select(['id', 'process_type', 'ordinal', 'state', 'worker_id'])
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId);
    if (isUuid) query = query.where('id', '=', ref);
    else if (named) query = query.where('process_type', '=', named[1]!).where('ordinal', '=', Number(named[2]));
    else return Promise.resolve(undefined);
    return query.orderBy('started_at', 'desc').executeTakeFirst();
  }

  /** The environment's first running instance, web first (what `slipway exec APP` enters). */
  firstRunning(applicationId: string, environmentId: string, processType?: string) {
    let query = this.db
      .selectFrom('instances')
      .select(['id', 'process_type', 'ordinal', 'state', 'worker_id'])
      .where('application_id', '=', applicationId)
      .where('environment_id', '=', environmentId)
      .where('state', 'in', ['healthy', 'running', 'starting']);
    if (processType) query = query.where('process_type', '=', processType);
    return query
      .orderBy(sql`CASE WHEN process_type = 'web' THEN 0 ELSE 1 END`)
      .orderBy('process_type')
      .orderBy('ordinal')
      .executeTakeFirst();
  }

  insert(row: Omit<ExecSessionRow, 'created_at' | 'started_at' | 'finished_at' | 'exit_code' | 'ssh_token_hash'>) {
    return this.db.insertInto('exec_sessions').values(row).returningAll().executeTakeFirstOrThrow();
  }

  find(id: string) {
    return this.db.selectFrom('exec_sessions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Marks the session attached: only once, only by its user, only within ATTACH_WITHIN_SECONDS of its opening. */
  claim(id: string, userId: string) {
    return this.db
      .updateTable('exec_sessions')
      .set({ started_at: sql`now()` })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('started_at', 'is', null)
      .where('created_at', '>', sql<Date>`now() - make_interval(secs => ${ATTACH_WITHIN_SECONDS})`)
      .returningAll()
      .executeTakeFirst();
  }

  /** Binds the session to the hash of the one-use token that attaches it over SSH. */
  setSshToken(id: string, tokenHash: string) {
    return this.db.updateTable('exec_sessions').set({ ssh_token_hash: tokenHash }).where('id', '=', id).execute();
  }

  /** Whether a session waits for this SSH token (not attached yet, not expired): read only. */
  findWaitingBySshToken(tokenHash: string) {
    return this.db
      .selectFrom('exec_sessions')
      .select('id')
      .where('ssh_token_hash', '=', tokenHash)
      .where('started_at', 'is', null)
      .where('created_at', '>', sql<Date>`now() - make_interval(secs => ${ATTACH_WITHIN_SECONDS})`)
      .executeTakeFirst();
  }

  /**
   * Marks the session of this SSH token attached (once, within ATTACH_WITHIN_SECONDS), recording
   * what the SSH client asked to run: its command (null: a shell) and whether it has a terminal.
   */
  claimBySshToken(tokenHash: string, run: { command: string | null; tty: boolean }) {
    return this.db
      .updateTable('exec_sessions')
      .set({ started_at: sql`now()`, command: run.command, tty: run.tty })
      .where('ssh_token_hash', '=', tokenHash)
      .where('started_at', 'is', null)
      .where('created_at', '>', sql<Date>`now() - make_interval(secs => ${ATTACH_WITHIN_SECONDS})`)
      .returningAll()
      .executeTakeFirst();
  }

  finish(id: string, exitCode: number | null) {
    return this.db
      .updateTable('exec_sessions')
      .set({ finished_at: sql`now()`, exit_code: exitCode })
      .where('id', '=', id)
      .execute();
  }
}
