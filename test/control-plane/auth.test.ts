import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, expectError } from './fixtures.js';

let h: Harness;
// A small failure budget keeps the rate-limit tests short.
beforeAll(async () => {
  h = await createHarness({ LOGIN_MAX_ATTEMPTS: 6, LOGIN_ADDRESS_MAX_ACCOUNTS: 3, METRICS_TOKEN });
});
afterAll(async () => {
  await h?.close();
});

const METRICS_TOKEN = 'auth-test-metrics-token-0123456789';
const metricsText = async () =>
  (await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;

let addressCounter = 0;
/** Each test logs in from its own address so per-address limits never cross tests. */
const nextAddress = () => `10.0.${Math.floor(++addressCounter / 250)}.${(addressCounter % 250) + 1}`;

async function login(email: string, password: string, remoteAddress = nextAddress()) {
  return h.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password }, remoteAddress });
}

const sessionCookie = (res: { cookies: Array<{ name: string; value: string }> }) => res.cookies.find((c) => c.name === 'slipway_session');

describe('sessions', () => {
  it('login sets an HttpOnly SameSite=Lax cookie; the session reports the user; logout ends it', async () => {
    const u = await h.user();
    const res = await login(u.email.toUpperCase(), u.password);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ authenticated: true, user: { id: u.id, username: u.username, email: u.email, is_admin: false } });
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/slipway_session=/);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).toMatch(/Path=\//);
    expect(setCookie).not.toMatch(/Secure/i); // plain HTTP here; Secure only over TLS
    const token = sessionCookie(res)!.value;

    // Stored only as a hash.
    const stored = await h.ctx.db.selectFrom('sessions').selectAll().where('user_id', '=', u.id).execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(stored)).not.toContain(token);

    const cookies = { slipway_session: token };
    const session = await h.app.inject({ method: 'GET', url: '/v1/auth/session', cookies });
    expect(session.json()).toMatchObject({ authenticated: true, user: { id: u.id } });
    const orgs = await h.app.inject({ method: 'GET', url: '/v1/organizations', cookies });
    expect(orgs.statusCode).toBe(200);

    const out = await h.app.inject({ method: 'POST', url: '/v1/auth/logout', cookies });
    expect(out.json()).toEqual({ ok: true });
    expect(String(out.headers['set-cookie'])).toMatch(/slipway_session=;/);
    expect(await h.ctx.db.selectFrom('sessions').selectAll().where('user_id', '=', u.id).execute()).toHaveLength(0);

    const after = await h.app.inject({ method: 'GET', url: '/v1/auth/session', cookies });
    expect(after.json()).toEqual({ authenticated: false, user: null });
    const refused = await h.app.inject({ method: 'GET', url: '/v1/organizations', cookies });
    expectError({ status: refused.statusCode, body: refused.json() }, 401);
  });

  it('a session cookie changes nothing from another origin (an app on a sibling domain is the same site)', async () => {
    const u = await h.user();
    const cookies = { slipway_session: sessionCookie(await login(u.email, u.password))!.value };
    const post = (url: string, headers: Record<string, string>, payload?: object) =>
      h.app.inject({ method: 'POST', url, cookies, headers, ...(payload ? { payload } : {}) });
    const keys = async () => (await h.app.inject({ method: 'GET', url: '/v1/auth/api-keys', cookies })).json().length;

    for (const headers of <Array<Record<string, string>>>[
      { 'sec-fetch-site': 'same-site', origin: 'http://app.shop.acme.localhost' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'http://evil.example' },
      { origin: 'null' },
    ]) {
      const refused = await post('/v1/auth/api-keys', headers, { name: 'csrf' });
      expectError({ status: refused.statusCode, body: refused.json() }, 403);
      expect((await post('/v1/auth/logout', headers)).statusCode).toBe(403);
    }
    expect(await keys()).toBe(1); // the one h.user() made
    expect(
      (await h.app.inject({ method: 'GET', url: '/v1/auth/session', cookies, headers: { 'sec-fetch-site': 'cross-site' } })).json()
        .authenticated,
    ).toBe(true);

    // The same origin (and clients that are not browsers) still work; API keys are not cookies.
    expect((await post('/v1/auth/api-keys', { 'sec-fetch-site': 'same-origin' }, { name: 'a' })).statusCode).toBe(201);
    expect((await post('/v1/auth/api-keys', { origin: 'http://localhost:80' }, { name: 'b' })).statusCode).toBe(201);
    expect((await post('/v1/auth/api-keys', {}, { name: 'c' })).statusCode).toBe(201);
    const byKey = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/api-keys',
      headers: { ...u.headers, 'sec-fetch-site': 'cross-site' },
      payload: { name: 'd' },
    });
    expect(byKey.statusCode).toBe(201);
    expect(await keys()).toBe(5);
  });

  it('an expired session is not a credential', async () => {
    const u = await h.user();
    const res = await login(u.email, u.password);
    const cookies = { slipway_session: sessionCookie(res)!.value };
    await h.ctx.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('user_id', '=', u.id)
      .execute();
    const orgs = await h.app.inject({ method: 'GET', url: '/v1/organizations', cookies });
    expect(orgs.statusCode).toBe(401);
    expect(orgs.json()).toMatchObject({ status: 401 });
  });

  it('GET /auth/session without credentials answers authenticated: false', async () => {
    const res = await call(h, 'GET', '/v1/auth/session');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ authenticated: false, user: null });
    const bogus = await call(h, 'GET', '/v1/auth/session', null, undefined, { 'x-api-key': 'slw_nope' });
    expect(bogus.body).toEqual({ authenticated: false, user: null });
  });

  it('logout without credentials is 401', async () => {
    expectError(await call(h, 'POST', '/v1/auth/logout'), 401);
  });

  it('a wrong password and an unknown account get the same 401', async () => {
    const u = await h.user();
    const wrong = await login(u.email, 'not-the-password');
    const unknown = await login('nobody@example.com', 'whatever');
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json()).toEqual(unknown.json());
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('login validates its body', async () => {
    expectError(await call(h, 'POST', '/v1/auth/login', null, { email: 'a@b.c' }), 422);
    expectError(await call(h, 'POST', '/v1/auth/login', null, { email: 'a@b.c', password: 'x', remember: true }), 422);
    expectError(await call(h, 'POST', '/v1/auth/login', null, { email: 1, password: 'x' }), 422);
  });
});

describe('login rate limits', () => {
  it('limits failures per (account, address); the account itself is never locked for everyone (issue 20)', async () => {
    const u = await h.user();
    const stranger = nextAddress();
    for (let i = 0; i < 3; i++) expect((await login(u.email, 'wrong', stranger)).statusCode).toBe(401);
    const limited = await login(u.email, 'wrong', stranger);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ status: 429, message: expect.any(String) });
    // Even the right password is refused from that address while it is limited...
    expect((await login(u.email, u.password, stranger)).statusCode).toBe(429);
    // ...but the owner, from their own address, logs in.
    expect((await login(u.email, u.password)).statusCode).toBe(200);
    // When the window has passed, the right password works again from the limited address too.
    await h.ctx.db
      .updateTable('login_failures')
      .set({ window_started: new Date(Date.now() - 16 * 60_000) })
      .execute();
    expect((await login(u.email, u.password, stranger)).statusCode).toBe(200);
  });

  it('limits an address failing across many accounts, but not for the accounts that signed in from it before (issue 27)', async () => {
    const address = nextAddress();
    // A colleague behind the same proxy signed in from it earlier.
    const colleague = await h.user();
    expect((await login(colleague.email, colleague.password, address)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) expect((await login(`ghost${i}@example.com`, 'wrong', address)).statusCode).toBe(401);
    const u = await h.user();
    expect((await login(u.email, u.password, address)).statusCode).toBe(429);
    expect((await login(u.email, u.password, nextAddress())).statusCode).toBe(200);
    // The stuffing from that address did not lock the colleague out.
    expect((await login(colleague.email, colleague.password, address)).statusCode).toBe(200);
  });

  it('one address hammering one account never counts against the address: others behind it sign in (issue 27)', async () => {
    const address = nextAddress();
    const victim = await h.user();
    for (let i = 0; i < 3; i++) expect((await login(victim.email, 'wrong', address)).statusCode).toBe(401);
    for (let i = 0; i < 5; i++) expect((await login(victim.email, 'wrong', address)).statusCode).toBe(429);
    const neighbour = await h.user();
    expect((await login(neighbour.email, neighbour.password, address)).statusCode).toBe(200);
  });

  it('guessing spread over many addresses slows the account down for new addresses, never for its known ones (issue 27)', async () => {
    const u = await h.user();
    const home = nextAddress();
    expect((await login(u.email, u.password, home)).statusCode).toBe(200);
    for (let i = 0; i < 6; i++) expect((await login(u.email, 'wrong', nextAddress())).statusCode).toBe(401);
    const fresh = await login(u.email, u.password, nextAddress());
    expect(fresh.statusCode).toBe(429);
    expect(fresh.json().message).toMatch(/for this account; retry in \d+ s/);
    // The owner, from where they signed in before, is not held back.
    expect((await login(u.email, u.password, home)).statusCode).toBe(200);
  });

  it('200 concurrent wrong logins get at most the allowance of password checks; the others behind that address still sign in (issue 37)', async () => {
    const address = nextAddress();
    const home = nextAddress();
    const victim = await h.user();
    const neighbour = await h.user();
    expect((await login(victim.email, victim.password, home)).statusCode).toBe(200);
    const checked = async () =>
      Number(/^slipway_login_password_checks_total\{outcome="wrong"\} (\d+)/m.exec(await metricsText())?.[1] ?? 0);
    const checkedBefore = await checked();
    const started = Date.now();
    const storm = await Promise.all(Array.from({ length: 200 }, () => login(victim.email, 'wrong', address)));
    const seconds = (Date.now() - started) / 1000;
    const kinds = storm.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.statusCode]: (acc[r.statusCode] ?? 0) + 1 }), {});
    // 401 is a checked password; 429 was refused before any check. Three free attempts (LOGIN_FREE_ATTEMPTS), then
    // one per backoff (1 s, 2 s, ...): a burst gets a fourth only if it outlasted a second.
    const allowance = 3 + Math.floor(Math.log2(seconds + 1));
    expect(kinds[401]).toBeGreaterThanOrEqual(3);
    expect(kinds[401]).toBeLessThanOrEqual(allowance);
    expect(kinds[401] + kinds[429]).toBe(200);
    // The platform's own count of password checks says the same.
    expect((await checked()) - checkedBefore).toBe(kinds[401]);
    // Nobody else behind that address is held back: a neighbour signs in for the first time from it...
    expect((await login(neighbour.email, neighbour.password, address)).statusCode).toBe(200);
    // ...and the victim, from where they signed in before, too.
    expect((await login(victim.email, victim.password, home)).statusCode).toBe(200);
  });

  it('X-Forwarded-For does not reset the per-address count unless TRUST_PROXY is set', async () => {
    const address = nextAddress();
    for (let i = 0; i < 3; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        remoteAddress: address,
        headers: { 'x-forwarded-for': `192.0.2.${i + 1}` },
        payload: { email: `spoof${i}@example.com`, password: 'x' },
      });
      expect(res.statusCode).toBe(401);
    }
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      remoteAddress: address,
      headers: { 'x-forwarded-for': '192.0.2.99' },
      payload: { email: 'spoof9@example.com', password: 'x' },
    });
    expect(res.statusCode).toBe(429);
  });
});

describe('passwords', () => {
  it('are stored with scrypt (memory-hard), salted, never in clear', async () => {
    // Two users made through the API with the same password: salted, their hashes differ.
    const admin = await h.user({ admin: true });
    const password = 'one-password-for-both';
    const ids: string[] = [];
    for (const username of ['salted-a', 'salted-b']) {
      const made = await call(h, 'POST', '/v1/users', admin, { username, email: `${username}@example.com`, password });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      ids.push(made.body.id);
    }
    const rows = await h.ctx.db.selectFrom('users').select(['id', 'password_hash']).where('id', 'in', ids).execute();
    for (const row of rows) {
      const [scheme, n, r] = row.password_hash.split('$');
      expect(scheme).toBe('scrypt');
      // N * r * 128 bytes of memory per hash: at least 16 MiB.
      expect(Number(n) * Number(r) * 128).toBeGreaterThanOrEqual(16 * 1024 * 1024);
      expect(row.password_hash).not.toContain(password);
    }
    expect(rows[0]!.password_hash).not.toBe(rows[1]!.password_hash);
  });
});

describe('API keys', () => {
  it('are shown once, stored only as a hash, listed without the key, and revocable', async () => {
    const u = await h.user();
    const created = await call(h, 'POST', '/v1/auth/api-keys', u, { name: 'ci' });
    expect(created.status).toBe(201);
    const { key, id, prefix } = created.body;
    expect(created.body).toMatchObject({ name: 'ci', expires: null, last_used: null, created: expect.any(String) });
    expect(key).toMatch(/^slw_/);
    expect(key.startsWith(prefix)).toBe(true);

    const row = await h.ctx.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(key);

    const asKey = { 'x-api-key': key };
    const session = await call(h, 'GET', '/v1/auth/session', null, undefined, asKey);
    expect(session.body).toMatchObject({ authenticated: true, user: { id: u.id } });

    const list = await call(h, 'GET', '/v1/auth/api-keys', u);
    expect(list.status).toBe(200);
    const listed = list.body.find((k: any) => k.id === id);
    expect(listed).toMatchObject({ name: 'ci', prefix });
    expect(listed.last_used).not.toBeNull();
    expect(list.raw).not.toContain(key);
    expect(Object.keys(listed).sort()).toEqual([
      'created',
      'expires',
      'id',
      'kind',
      'last_used',
      'last_used_address',
      'name',
      'prefix',
      'scope',
    ]);

    // Another user cannot revoke it (it is not theirs: 404).
    const other = await h.user();
    expectError(await call(h, 'DELETE', `/v1/auth/api-keys/${id}`, other), 404);

    expect((await call(h, 'DELETE', `/v1/auth/api-keys/${id}`, u)).body).toEqual({ ok: true });
    expectError(await call(h, 'GET', '/v1/organizations', null, undefined, asKey), 401);
    expectError(await call(h, 'DELETE', `/v1/auth/api-keys/${id}`, u), 404);
    expectError(await call(h, 'DELETE', '/v1/auth/api-keys/not-a-uuid', u), 404);
  });

  it('expire', async () => {
    const u = await h.user();
    const created = await call(h, 'POST', '/v1/auth/api-keys', u, { name: 'short', expires_in_days: 1 });
    const expires = Date.parse(created.body.expires);
    expect(expires - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    const asKey = { 'x-api-key': created.body.key };
    expect((await call(h, 'GET', '/v1/organizations', null, undefined, asKey)).status).toBe(200);
    await h.ctx.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', created.body.id)
      .execute();
    // The verified key may be cached for CREDENTIAL_CACHE_SECONDS; the database announces the change at once.
    await waitFor(
      'the expired key to be refused',
      async () => (await call(h, 'GET', '/v1/organizations', null, undefined, asKey)).status === 401,
      {
        timeout: 5000,
      },
    );
    expectError(await call(h, 'GET', '/v1/organizations', null, undefined, asKey), 401);
  });

  it('validate their body', async () => {
    const u = await h.user();
    expectError(await call(h, 'POST', '/v1/auth/api-keys', u, {}), 422);
    expectError(await call(h, 'POST', '/v1/auth/api-keys', u, { name: 'x', expires_in_days: 0 }), 422);
    expectError(await call(h, 'POST', '/v1/auth/api-keys', u, { name: 'x', expires_in_days: '5' }), 422);
    expectError(await call(h, 'POST', '/v1/auth/api-keys', u, { name: 'x'.repeat(256) }), 422);
  });

  it('an invalid key is 401 even with a valid session cookie alongside', async () => {
    const u = await h.user();
    const res = await login(u.email, u.password);
    const cookie = sessionCookie(res)!.value;
    const r = await h.app.inject({
      method: 'GET',
      url: '/v1/organizations',
      cookies: { slipway_session: cookie },
      headers: { 'x-api-key': 'slw_wrong' },
    });
    expect(r.statusCode).toBe(401);
  });
});

describe('behind a trusted proxy (TRUST_PROXY=true)', () => {
  let proxied: Harness;
  beforeAll(async () => {
    proxied = await createHarness({ TRUST_PROXY: 'true', LOGIN_FREE_ATTEMPTS: 2, LOGIN_ADDRESS_MAX_ACCOUNTS: 2 });
  });
  afterAll(async () => {
    await proxied?.close();
  });

  it('marks the cookie Secure for https and counts failures per forwarded address', async () => {
    const u = await proxied.user();
    const viaTls = await proxied.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: u.email, password: u.password },
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.7' },
    });
    expect(viaTls.statusCode).toBe(200);
    expect(String(viaTls.headers['set-cookie'])).toMatch(/;\s*Secure/i);

    const fail = (address: string, email: string) =>
      proxied.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        payload: { email, password: 'x' },
        headers: { 'x-forwarded-for': address },
      });
    expect((await fail('198.51.100.8', 'ghost@example.com')).statusCode).toBe(401);
    expect((await fail('198.51.100.8', 'ghost2@example.com')).statusCode).toBe(401);
    // The per-address limit is reached for that client; another account from another client passes.
    const other = await proxied.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: u.email, password: u.password },
      headers: { 'x-forwarded-for': '198.51.100.9' },
    });
    expect(other.statusCode).toBe(200);
    // The same client address is limited, whatever account it tries.
    const sameClient = await proxied.app.inject({
      method: 'POST',
      url: '/v1/auth/login',
      payload: { email: u.email, password: u.password },
      headers: { 'x-forwarded-for': '198.51.100.8' },
    });
    expect(sameClient.statusCode).toBe(429);
  });
});

describe('cleanup of spent login records', () => {
  it('the pipeline sweeper deletes expired sessions and failure counters past their window, keeping live ones', async () => {
    const w = await createHarness({ LOGIN_WINDOW_SECONDS: 60 }, { jobs: true });
    try {
      const u = await w.user();
      const log = (payload: object, remoteAddress: string) =>
        w.app.inject({ method: 'POST', url: '/v1/auth/login', payload, remoteAddress });
      const kept = sessionCookie(await log({ email: u.email, password: u.password }, '10.9.0.1'))!.value;
      const expired = sessionCookie(await log({ email: u.email, password: u.password }, '10.9.0.2'))!.value;
      for (let i = 0; i < 3; i++)
        expect((await log({ email: `nobody${i}@example.com`, password: 'wrong password' }, '10.9.0.3')).statusCode).toBe(401);
      // Time passes: one session expires, the failure window of nobody0 and the address ends.
      await w.ctx.db
        .updateTable('sessions')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('token_hash', '=', createHash('sha256').update(expired).digest('hex'))
        .execute();
      await w.ctx.db
        .updateTable('login_failures')
        .set({ window_started: new Date(Date.now() - 120_000) })
        .where('key', 'in', ['pair:10.9.0.3|nobody0@example.com', 'account:nobody0@example.com'])
        .execute();

      // Sweepers run when workers start (and about every minute after).
      await w.ctx.jobs!.stop();
      await w.ctx.jobs!.startWorkers();

      const sessions = await w.ctx.db.selectFrom('sessions').select('token_hash').where('user_id', '=', u.id).execute();
      expect(sessions.map((s) => s.token_hash)).toEqual([createHash('sha256').update(kept).digest('hex')]);
      const failures = await w.ctx.db.selectFrom('login_failures').select('key').orderBy('key').execute();
      expect(failures.map((f) => f.key)).toEqual([
        'account:nobody1@example.com',
        'account:nobody2@example.com',
        // The address's count of accounts it failed on (its window goes on: its last account failed just now).
        'address:10.9.0.3',
        'pair:10.9.0.3|nobody1@example.com',
        'pair:10.9.0.3|nobody2@example.com',
      ]);
      const session = await w.app.inject({ method: 'GET', url: '/v1/auth/session', cookies: { slipway_session: kept } });
      expect(session.json()).toMatchObject({ authenticated: true, user: { id: u.id } });
    } finally {
      await w.close();
    }
  }, 60_000);
});
