import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';

/**
 * A new session for a user another way of signing in has vouched for (single sign-on): the same
 * token and lifetime as a password login's. Takes `db` so the caller's transaction holds it.
 */
export async function openSession(db: Db, userId: string, ttlHours: number) {
  const token = newToken('sess');
  const id = uuidv7();
  const expires = new Date(Date.now() + ttlHours * 3600_000);
  await db
    .insertInto('sessions')
    .values({ id, token_hash: hashToken(token), user_id: userId, expires_at: expires })
    .execute();
  return { id, token, expires };
}
