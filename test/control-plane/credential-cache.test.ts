import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { start, type Started } from '../../src/lifecycle.js';
import { composePlatform } from '../../src/services.js';
import { createDb } from '../../src/platform/db/database.js';
import type { App } from '../../src/platform/http/types.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Verified credentials are cached per process (CREDENTIAL_CACHE_SECONDS). Two API processes on one
 * database, each with its own cache: a revocation made through one must stop the credential in
 * the other promptly (the database announces it), and within the TTL even if no notice arrives.
 */
describe('credential cache', () => {
  const TTL_SECONDS = 60; // long: revocations below must not wait for it
  let h: Harness;
  let other: App; // a second API process on the same database
  let otherDb: ReturnType<typeof createDb>;
  let otherStarted: Started;

  beforeAll(async () => {
    h = await createHarness({ CREDENTIAL_CACHE_SECONDS: TTL_SECONDS });
    otherDb = createDb(h.databaseUrl, 3);
    // Built and started as main.ts does in the `api` role (which follows credential changes).
    const ctx = { ...h.ctx, db: otherDb, jobs: undefined, runtime: undefined };
    const logger = pino({ level: 'silent' });
    const composition = composePlatform(ctx, logger);
    other = await buildApp(ctx, { composition, loggerInstance: logger });
    otherStarted = await start({ composition, logger, workers: false, http: { app: other } });
  });
  afterAll(async () => {
    await otherStarted?.stop();
    await otherDb?.destroy();
    await h?.close();
  });

  const session = (app: App, headers: Record<string, string>) => app.inject({ method: 'GET', url: '/v1/auth/api-keys', headers });
  const statusIn = async (app: App, headers: Record<string, string>) => (await session(app, headers)).statusCode;

  /** The credential works in both processes (and is now cached in both). */
  async function usedInBoth(headers: Record<string, string>) {
    expect(await statusIn(h.app, headers)).toBe(200);
    expect(await statusIn(other, headers)).toBe(200);
    expect(await statusIn(other, headers)).toBe(200);
  }

  async function newKey(user: TestUser) {
    const res = await h.app.inject({ method: 'POST', url: '/v1/auth/api-keys', headers: user.headers, payload: { name: 'cached' } });
    expect(res.statusCode).toBe(201);
    const { id, key } = res.json() as { id: string; key: string };
    return { id, headers: { 'x-api-key': key } };
  }

  it('a deleted API key stops working in every process at once, not after the TTL', async () => {
    const user = await h.user();
    const key = await newKey(user);
    await usedInBoth(key.headers);
    const del = await h.app.inject({ method: 'DELETE', url: `/v1/auth/api-keys/${key.id}`, headers: user.headers });
    expect(del.statusCode).toBe(200);
    expect(await statusIn(h.app, key.headers)).toBe(401);
    await waitFor('the other process to refuse the deleted key', async () => (await statusIn(other, key.headers)) === 401, {
      timeout: 5000,
    });
  });

  it('a logged-out session stops working in the other process', async () => {
    const user = await h.user();
    const login = await other.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: user.email, password: user.password } });
    expect(login.statusCode).toBe(200);
    const cookie = { cookie: login.headers['set-cookie']!.toString().split(';')[0]! };
    await usedInBoth(cookie);
    const out = await other.inject({ method: 'POST', url: '/v1/auth/logout', headers: cookie });
    expect(out.statusCode).toBe(200);
    expect(await statusIn(other, cookie)).toBe(401);
    await waitFor('the first process to refuse the ended session', async () => (await statusIn(h.app, cookie)) === 401, { timeout: 5000 });
  });

  it('an expired key and a deleted user stop working, whatever wrote the change', async () => {
    const expiring = await h.user();
    await usedInBoth(expiring.headers);
    await sql`update api_keys set expires_at = now() - interval '1 second' where user_id = ${expiring.id}`.execute(h.ctx.db);
    await waitFor(
      'both processes to refuse the expired key',
      async () => (await statusIn(h.app, expiring.headers)) === 401 && (await statusIn(other, expiring.headers)) === 401,
    );

    const leaving = await h.user();
    await usedInBoth(leaving.headers);
    await sql`delete from users where id = ${leaving.id}`.execute(h.ctx.db); // keys go by cascade
    await waitFor(
      'both processes to refuse the deleted user',
      async () => (await statusIn(h.app, leaving.headers)) === 401 && (await statusIn(other, leaving.headers)) === 401,
    );
  });

  it('without any notice, a cached credential lasts no longer than the TTL', async () => {
    const shortLived = await createHarness({ CREDENTIAL_CACHE_SECONDS: 1 });
    try {
      const user = await shortLived.user();
      expect(await statusIn(shortLived.app, user.headers)).toBe(200);
      // Silence the announcements: only the TTL can end the cached entry now.
      await sql`alter table api_keys disable trigger api_keys_credentials_changed`.execute(shortLived.ctx.db);
      await sql`delete from api_keys where user_id = ${user.id}`.execute(shortLived.ctx.db);
      // The TTL is 1 s; the wait allows for a loaded machine.
      await waitFor('the TTL to end the cached key', async () => (await statusIn(shortLived.app, user.headers)) === 401, {
        timeout: 4000,
        every: 50,
      });
    } finally {
      await shortLived.close();
    }
  });
});
