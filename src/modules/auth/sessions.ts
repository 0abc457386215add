import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../../platform/db/database.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';

/** How a session began: a password, or an identity provider that vouched for the person (single sign-on). */
export type SessionMethod = 'password' | 'oidc';

/** Where a sign-in came from, remembered with its session (listed to its owner, never to others). */
export interface SessionOrigin {
  method: SessionMethod;
  address: string | null;
  userAgent: string | null;
}

/** User agents are the client's own words: kept short. */
const USER_AGENT_MAX = 300;

/**
 * A new login session: its token (shown once, kept as a hash), lifetime and origin. Takes `db`
 * so the caller's transaction holds it (single sign-on makes the user, roles and session at once).
 */
export async function openSession(db: Db, userId: string, ttlHours: number, origin: SessionOrigin) {
  const token = newToken('sess');
  const id = uuidv7();
  const expires = new Date(Date.now() + ttlHours * 3600_000);
  await db
    .insertInto('sessions')
    .values({
      id,
      token_hash: hashToken(token),
      user_id: userId,
      expires_at: expires,
      method: origin.method,
      address: origin.address,
      user_agent: origin.userAgent?.slice(0, USER_AGENT_MAX) || null,
    })
    .execute();
  await db
    .updateTable('users')
    .set({ last_sign_in_at: sql`now()`, last_sign_in_method: origin.method })
    .where('id', '=', userId)
    .execute();
  return { id, token, expires };
}
