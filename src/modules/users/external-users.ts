import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { UNUSABLE_PASSWORD_HASH } from '../../platform/crypto/passwords.js';

/** Tries of `name`, `name-2`, `name-3`, ... before a random suffix is taken. */
const NUMBERED_TRIES = 20;

/**
 * A user vouched for by an identity provider (single sign-on's first sign-in): no password (the
 * stored hash matches none), a username made from what the provider suggests, made unique. Takes
 * `db` so the caller's transaction holds the user with the rest of the sign-in.
 */
export async function insertExternalUser(db: Db, input: { email: string; preferredUsername: string }) {
  const base =
    input.preferredUsername
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 50) || 'user';
  const taken = await db
    .selectFrom('users')
    .select('username')
    .where((eb) => eb(eb.fn('lower', ['username']), 'like', `${base.toLowerCase().replace(/[%_\\]/g, '\\$&')}%`))
    .execute();
  const used = new Set(taken.map((row) => row.username.toLowerCase()));
  let username = base;
  for (let n = 2; used.has(username.toLowerCase()) && n <= NUMBERED_TRIES; n++) username = `${base}-${n}`;
  if (used.has(username.toLowerCase())) username = `${base}-${uuidv7().slice(-6)}`;
  // Another sign-in taking the name meanwhile fails the caller's transaction (a unique violation): nothing half made.
  return db
    .insertInto('users')
    .values({ id: uuidv7(), username, email: input.email.toLowerCase(), password_hash: UNUSABLE_PASSWORD_HASH, is_admin: false })
    .returning(['id', 'username', 'email', 'is_admin'])
    .executeTakeFirstOrThrow();
}
