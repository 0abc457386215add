import { sql } from 'kysely';
import type { Insertable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { ApiKeysTable } from '../../platform/db/schema.js';

const principalColumns = ['users.id', 'users.username', 'users.email', 'users.is_admin'] as const;

/** How long a successful sign-in keeps its address known to the account (spared the attack limits). */
const KNOWN_ADDRESS_DAYS = 30;

export class AuthRepository {
  constructor(private readonly db: Db) {}

  /** A live session: neither past its lifetime nor unused for longer than `idleMinutes` (0: no idle limit). */
  findSession(tokenHash: string, idleMinutes: number) {
    let q = this.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select([...principalColumns, 'sessions.id as credential_id', 'sessions.expires_at', 'sessions.last_seen_at'])
      .where('sessions.token_hash', '=', tokenHash)
      .where('sessions.expires_at', '>', new Date());
    if (idleMinutes > 0) q = q.where('sessions.last_seen_at', '>', sql<Date>`now() - make_interval(mins => ${idleMinutes})`);
    return q.executeTakeFirst();
  }

  touchSession(id: string) {
    return this.db
      .updateTable('sessions')
      .set({ last_seen_at: sql`now()` })
      .where('id', '=', id)
      .execute();
  }

  deleteSession(tokenHash: string) {
    return this.db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute();
  }

  deleteExpiredSessions(idleMinutes: number) {
    return this.db
      .deleteFrom('sessions')
      .where((eb) =>
        eb.or([
          eb('expires_at', '<=', new Date()),
          ...(idleMinutes > 0 ? [eb('last_seen_at', '<=', sql<Date>`now() - make_interval(mins => ${idleMinutes})`)] : []),
        ]),
      )
      .execute();
  }

  findApiKey(tokenHash: string) {
    return this.db
      .selectFrom('api_keys')
      .innerJoin('users', 'users.id', 'api_keys.user_id')
      .select([
        ...principalColumns,
        'api_keys.id as credential_id',
        'api_keys.last_used_at',
        'api_keys.last_used_address',
        'api_keys.expires_at',
        'api_keys.organization_id',
        'api_keys.project_id',
        'api_keys.application_id',
        'api_keys.environment_id',
        'api_keys.actions',
      ])
      .where('api_keys.token_hash', '=', tokenHash)
      .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', new Date())]))
      .executeTakeFirst();
  }

  /** Records a use when it is the key's first of the (UTC) day; false when the key was used earlier today. */
  async touchApiKeyFirstToday(id: string, address: string | null): Promise<boolean> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ last_used_at: sql`now()`, last_used_address: address })
      .where('id', '=', id)
      .where((eb) =>
        eb.or([
          eb('last_used_at', 'is', null),
          eb('last_used_at', '<', sql<Date>`date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`),
        ]),
      )
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  touchApiKey(id: string, address: string | null) {
    return this.db.updateTable('api_keys').set({ last_used_at: new Date(), last_used_address: address }).where('id', '=', id).execute();
  }

  async insertApiKey(key: Insertable<ApiKeysTable>) {
    const { id } = await this.db.insertInto('api_keys').values(key).returning('id').executeTakeFirstOrThrow();
    return (await this.listApiKeys(key.user_id, id))[0]!;
  }

  /** The user's keys (or one of them) with the slugs of what each is limited to. */
  listApiKeys(userId: string, id?: string) {
    let q = this.db
      .selectFrom('api_keys as k')
      .leftJoin('organizations as o', 'o.id', 'k.organization_id')
      .leftJoin('projects as p', 'p.id', 'k.project_id')
      .leftJoin('applications as a', 'a.id', 'k.application_id')
      .leftJoin('environments as e', 'e.id', 'k.environment_id')
      .select([
        'k.id',
        'k.name',
        'k.kind',
        'k.token_prefix',
        'k.created_at',
        'k.last_used_at',
        'k.last_used_address',
        'k.expires_at',
        'k.actions',
        'o.slug as organization',
        'p.slug as project',
        'a.slug as application',
        'e.slug as environment',
      ])
      .where('k.user_id', '=', userId);
    if (id) q = q.where('k.id', '=', id);
    return q.orderBy('k.created_at', 'desc').execute();
  }

  /** Spends a CLI browser-login code: false when it was approved before (by anyone). */
  async spendCliLoginCode(row: { code_hash: string; user_id: string; client: string }): Promise<boolean> {
    const res = await this.db
      .insertInto('cli_login_approvals')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  linkCliLoginKey(codeHash: string, apiKeyId: string) {
    return this.db.updateTable('cli_login_approvals').set({ api_key_id: apiKeyId }).where('code_hash', '=', codeHash).execute();
  }

  deleteOldCliLoginCodes(days: number) {
    return this.db
      .deleteFrom('cli_login_approvals')
      .where('created_at', '<', sql<Date>`now() - make_interval(days => ${days})`)
      .execute();
  }

  async deleteApiKey(userId: string, id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('api_keys').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /**
   * Reserves one password check on `key` before it is made: one statement, so the row lock orders
   * concurrent attempts and N of them at once get at most the allowance. Allowed while the window
   * holds fewer than `free` attempts, then one per backoff (1 s, 2 s, 4 s, ... at most `maxDelay`)
   * since the last one. Returns the attempt's number in the window, or null when refused.
   */
  async reserveAttempt(key: string, limits: { free: number; windowSeconds: number; maxDelay: number }): Promise<number | null> {
    const { free, windowSeconds, maxDelay } = limits;
    const stale = sql`login_failures.window_started < now() - make_interval(secs => ${windowSeconds})`;
    const row = await sql<{ count: number }>`
      insert into login_failures (key, count, window_started, last_failed_at) values (${key}, 1, now(), now())
      on conflict (key) do update set
        count = case when ${stale} then 1 else login_failures.count + 1 end,
        window_started = case when ${stale} then now() else login_failures.window_started end,
        last_failed_at = now()
      where ${stale}
         or login_failures.count < ${free}
         or login_failures.last_failed_at <= now() - make_interval(secs => least(${maxDelay}::float8, 2 ^ (login_failures.count - ${free})))
      returning count`.execute(this.db);
    return row.rows[0]?.count ?? null;
  }

  /** Gives back an attempt reserved by {@link reserveAttempt} that did not fail (the right password, or refused further on). */
  async refundAttempt(key: string) {
    await this.db
      .updateTable('login_failures')
      .set((eb) => ({ count: eb('count', '-', 1) }))
      .where('key', '=', key)
      .where('count', '>', 0)
      .execute();
  }

  /** Seconds until `key` may try again under the same backoff (0 when it may). */
  async secondsUntilNextAttempt(key: string, limits: { free: number; windowSeconds: number; maxDelay: number }): Promise<number> {
    const row = await this.db
      .selectFrom('login_failures')
      .select(['count', sql<number>`extract(epoch from now() - last_failed_at)::float8`.as('since')])
      .where('key', '=', key)
      .where('window_started', '>=', sql<Date>`now() - make_interval(secs => ${limits.windowSeconds})`)
      .executeTakeFirst();
    if (!row || row.count < limits.free) return 0;
    return Math.max(1, Math.ceil(Math.min(limits.maxDelay, 2 ** (row.count - limits.free)) - Number(row.since)));
  }

  /** Whether `account` signed in from `address` within KNOWN_ADDRESS_DAYS. */
  async isKnownAddress(account: string, address: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('login_known_addresses')
      .select('address')
      .where('account', '=', account)
      .where('address', '=', address)
      .where('last_success_at', '>=', sql<Date>`now() - make_interval(days => ${KNOWN_ADDRESS_DAYS})`)
      .executeTakeFirst();
    return row !== undefined;
  }

  async rememberAddress(account: string, address: string) {
    await this.db
      .insertInto('login_known_addresses')
      .values({ account, address })
      .onConflict((oc) => oc.columns(['account', 'address']).doUpdateSet({ last_success_at: sql`now()` }))
      .execute();
  }

  clearFailures(key: string) {
    return this.db.deleteFrom('login_failures').where('key', '=', key).execute();
  }

  /** Failure counters whose window has passed (or whose attempts were all given back) count for nothing (one row per address or e-mail tried); old known addresses neither. */
  async deleteStaleFailures(windowSeconds: number) {
    await this.db
      .deleteFrom('login_known_addresses')
      .where('last_success_at', '<', sql<Date>`now() - make_interval(days => ${KNOWN_ADDRESS_DAYS})`)
      .execute();
    return this.db
      .deleteFrom('login_failures')
      .where((eb) => eb.or([eb('window_started', '<', sql<Date>`now() - make_interval(secs => ${windowSeconds})`), eb('count', '<=', 0)]))
      .execute();
  }
}
