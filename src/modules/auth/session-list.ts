import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import { iso, isoOrNull } from '../../platform/http/schemas.js';

/**
 * A person's sign-ins that are still open: login sessions (password or single sign-on, in the
 * browser) and the keys a CLI received by the browser login (`cli-browser`: a key of kind
 * `cli_login`, the CLI's session). Revoking one ends it at its next request (401): deletions are
 * announced to every process (migration 0017), and this one forgets at once.
 */
export class SessionList {
  constructor(
    private readonly db: Db,
    private readonly settings: { idleMinutes: number },
    private readonly forgetUser: (userId: string) => void,
  ) {}

  /** Newest first; `current` marks the credential of the caller. */
  async list(userId: string, currentCredentialId: string | null) {
    const idle = this.settings.idleMinutes;
    let sessions = this.db
      .selectFrom('sessions')
      .select(['id', 'method', 'created_at', 'last_seen_at', 'address', 'user_agent', 'expires_at'])
      .where('user_id', '=', userId)
      .where('expires_at', '>', new Date());
    if (idle > 0) sessions = sessions.where('last_seen_at', '>', sql<Date>`now() - make_interval(mins => ${idle})`);
    const [open, cliLogins] = await Promise.all([
      sessions.execute(),
      this.db
        .selectFrom('api_keys')
        .select(['id', 'name', 'created_at', 'last_used_at', 'last_used_address', 'expires_at'])
        .where('user_id', '=', userId)
        .where('kind', '=', 'cli_login')
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
        .execute(),
    ]);
    const idleEnd = (lastSeen: Date, expires: Date) =>
      idle > 0 && lastSeen.getTime() + idle * 60_000 < expires.getTime() ? new Date(lastSeen.getTime() + idle * 60_000) : expires;
    return [
      ...open.map((s) => ({
        id: s.id,
        method: s.method as 'password' | 'oidc' | 'cli-browser',
        created: iso(s.created_at),
        last_used: iso(s.last_seen_at),
        address: s.address,
        user_agent: s.user_agent,
        expires: iso(idleEnd(s.last_seen_at, s.expires_at)),
        current: s.id === currentCredentialId,
      })),
      ...cliLogins.map((k) => ({
        id: k.id,
        method: 'cli-browser' as const,
        created: iso(k.created_at),
        last_used: isoOrNull(k.last_used_at),
        address: k.last_used_address,
        user_agent: k.name,
        expires: isoOrNull(k.expires_at),
        current: k.id === currentCredentialId,
      })),
    ].sort((a, b) => b.created.localeCompare(a.created));
  }

  /** Ends one of the user's sign-ins (the calling one too: that is a logout). */
  async revoke(userId: string, id: string) {
    const ended = await this.db.transaction().execute(async (trx) => {
      const session = await trx.deleteFrom('sessions').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
      if (Number(session.numDeletedRows) > 0) return true;
      const key = await trx
        .deleteFrom('api_keys')
        .where('user_id', '=', userId)
        .where('id', '=', id)
        .where('kind', '=', 'cli_login')
        .executeTakeFirst();
      return Number(key.numDeletedRows) > 0;
    });
    if (!ended) throw notFound('Session');
    this.forgetUser(userId);
  }

  /** Ends every sign-in of the user but `keep` (the caller's own; null: all of them). Returns how many ended. */
  async revokeAll(userId: string, keep: string | null) {
    const ended = await this.db.transaction().execute(async (trx) => {
      let sessions = trx.deleteFrom('sessions').where('user_id', '=', userId);
      let keys = trx.deleteFrom('api_keys').where('user_id', '=', userId).where('kind', '=', 'cli_login');
      if (keep) {
        sessions = sessions.where('id', '!=', keep);
        keys = keys.where('id', '!=', keep);
      }
      const [s, k] = [await sessions.executeTakeFirst(), await keys.executeTakeFirst()];
      return Number(s.numDeletedRows) + Number(k.numDeletedRows);
    });
    this.forgetUser(userId);
    return ended;
  }
}
