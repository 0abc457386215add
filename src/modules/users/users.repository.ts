import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

const userColumns = ['id', 'username', 'email', 'is_admin', 'created_at', 'updated_at'] as const;

export class UsersRepository {
  constructor(private readonly db: Db) {}

  insert(user: { id: string; username: string; email: string; password_hash: string; is_admin: boolean }) {
    return this.db.insertInto('users').values(user).returning(userColumns).executeTakeFirstOrThrow();
  }

  list() {
    return this.db.selectFrom('users').select(userColumns).orderBy('created_at').execute();
  }

  findByEmailWithHash(email: string) {
    return this.db
      .selectFrom('users')
      .select([...userColumns, 'password_hash'])
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .executeTakeFirst();
  }

  findByUsername(username: string) {
    return this.db
      .selectFrom('users')
      .select(userColumns)
      .where(sql<string>`lower(username)`, '=', username.toLowerCase())
      .executeTakeFirst();
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return row.n;
  }
}
