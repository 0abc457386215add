import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { SshKeysTable } from '../../platform/db/schema.js';

export type SshKeyRow = Selectable<SshKeysTable>;

/** Users' SSH public keys (migration 0052). */
export class SshKeysRepository {
  constructor(private readonly db: Db) {}

  listForUser(userId: string) {
    return this.db.selectFrom('ssh_keys').selectAll().where('user_id', '=', userId).orderBy('created_at').execute();
  }

  countForUser(userId: string) {
    return this.db
      .selectFrom('ssh_keys')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  }

  /** Inserts the key; undefined when its fingerprint is registered already (by anyone). */
  insert(row: Omit<SshKeyRow, 'created_at' | 'last_used_at'>) {
    return this.db
      .insertInto('ssh_keys')
      .values(row)
      .onConflict((oc) => oc.column('fingerprint').doNothing())
      .returningAll()
      .executeTakeFirst();
  }

  delete(userId: string, id: string) {
    return this.db.deleteFrom('ssh_keys').where('id', '=', id).where('user_id', '=', userId).returning('id').executeTakeFirst();
  }

  /** The key of this fingerprint and its user. */
  findByFingerprint(fingerprint: string) {
    return this.db
      .selectFrom('ssh_keys as k')
      .innerJoin('users as u', 'u.id', 'k.user_id')
      .select(['k.id', 'k.public_key', 'u.id as user_id', 'u.username', 'u.email', 'u.is_admin'])
      .where('k.fingerprint', '=', fingerprint)
      .executeTakeFirst();
  }

  touch(id: string) {
    return this.db
      .updateTable('ssh_keys')
      .set({ last_used_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }
}
