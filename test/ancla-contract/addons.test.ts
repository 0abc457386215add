import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { sandboxMissing } from '../isolation/fixtures.js';
import { openCredentials, redisCommands, type AddonCredentials } from '../../src/platform/addons/index.js';
import { calls } from './calls/addons.js';
import type { AnclaCall } from './calls/types.js';
import { sendCall } from './decoded-fields.js';

/**
 * Ancla's CLI on the cache and database of a service (`ancla cache info|flush`, `ancla dbshell`):
 * the Redis and Postgres add-ons attached to the application in the environment, over real HTTP
 * against real add-on servers. No answer carries a password; a flush empties the real Redis; a
 * service with nothing attached is the 404 the CLI reports as "no cache service found".
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const vars = { ws: 'acme', proj: 'shop', env: 'staging', svc: 'web' };
let h: Harness;
let base = '';
let alice: TestUser;
let carol: TestUser;
let mallory: TestUser;
const secrets: Record<string, { port: number; credentials: AddonCredentials }> = {};

const callOf = (suffix: string) => calls.find((c) => c.path.endsWith(suffix))!;
const raw = (user: TestUser, call: AnclaCall) =>
  fetch(`${base}${call.path.replace(/\{(\w+)\}/g, (_, n: keyof typeof vars) => vars[n])}`, {
    method: call.method,
    headers: { 'X-API-Key': user.apiKey, 'User-Agent': 'Go-http-client/1.1' },
  });
const v1 = async (user: TestUser, method: string, url: string, payload?: object) => {
  const res = await h.app.inject({ method: method as 'GET', url: `/v1${url}`, headers: user.headers, ...(payload ? { payload } : {}) });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json();
};
/** The add-on's own view of its data, through the test's copy of the platform's credentials. */
const redis = (commands: string[][]) => redisCommands(secrets.cache!.port, secrets.cache!.credentials, commands);

describe.skipIf(missing)("Ancla's CLI on the cache and database of a service", () => {
  beforeAll(async () => {
    h = await createHarness({}, { runtime: true });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
    [alice, carol, mallory] = [await h.user(), await h.user(), await h.user()];
    await v1(alice, 'POST', '/workspaces', { name: 'Acme' });
    await v1(mallory, 'POST', '/workspaces', { name: 'Globex' });
    await v1(alice, 'POST', '/workspaces/acme/members', { username: carol.username });
    const project = await v1(alice, 'POST', '/workspaces/acme/projects', { name: 'Shop' });
    const web = await v1(alice, 'POST', '/applications', { name: 'web', project_id: project.id });
    await v1(alice, 'POST', '/applications', { name: 'worker', project_id: project.id });
    await v1(alice, 'POST', '/workspaces/acme/projects/shop/envs', { name: 'staging' });

    // Before anything is attached: the 404 the CLI reports as "no cache service found".
    for (const call of calls) {
      const res = await raw(alice, call);
      expect(res.status, `${call.method} ${call.path}`).toBe(404);
      expect((await res.json()).message).toMatch(/^No (cache|database): no (redis|postgres) add-on attached to 'web' in staging/);
    }

    for (const [name, kind] of [
      ['cache', 'redis'],
      ['db', 'postgres'],
    ] as const) {
      await v1(alice, 'POST', '/organizations/acme/addons', { name, kind });
      await v1(alice, 'POST', `/organizations/acme/addons/${name}/attachments`, { application_id: web.id, environment: 'staging' });
      const row = await h.ctx.db
        .selectFrom('addons')
        .select(['port', 'credentials_sealed'])
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      secrets[name] = { port: row.port, credentials: openCredentials(h.ctx.secrets, row.credentials_sealed) };
    }
  }, 90_000);

  afterAll(async () => {
    await h?.close();
  });

  it('reads the cache of a service: engine, host and port, never the password', async () => {
    const { body } = await sendCall(base, carol.apiKey, callOf('/cache'), vars);
    expect(body).toMatchObject({ engine: 'redis', host: '127.0.0.1', port: secrets.cache!.port, addon: 'cache', variable: 'REDIS_URL' });
    const res = await raw(carol, callOf('/cache'));
    const answered = JSON.stringify(body) + JSON.stringify([...res.headers]);
    expect(answered).not.toContain(secrets.cache!.credentials.password);
    expect(answered).not.toMatch(/redis:\/\//);
    expect(res.headers.get('warning')).toMatch(/slipway -a acme\/shop\/web -e staging run -- sh -c 'redis-cli -u \$REDIS_URL'/);
    // Another environment, service or workspace: nothing attached there, or not the caller's.
    expect((await raw(carol, { ...callOf('/cache'), path: callOf('/cache').path.replace('{svc}', 'worker') })).status).toBe(404);
    expect((await raw(mallory, callOf('/cache'))).status).toBe(403);
  });

  it('flushes the cache of a service through the add-on connection of the platform (admins only)', async () => {
    expect(await redis([['SET', 'greeting', 'hello'], ['DBSIZE']])).toEqual(['OK', ':1']);
    // A member reads the cache but changes no add-on data; another workspace's user is refused too.
    const refused = await raw(carol, callOf('/cache/flush'));
    expect(refused.status).toBe(403);
    expect((await refused.json()).message).toMatch(/admins/);
    expect((await raw(mallory, callOf('/cache/flush'))).status).toBe(403);
    expect(await redis([['DBSIZE']])).toEqual([':1']);

    const { status, body } = await sendCall(base, alice.apiKey, callOf('/cache/flush'), vars);
    expect(status).toBe(200);
    expect(body).toEqual({ addon: 'cache', flushed: true });
    expect(await redis([['DBSIZE']])).toEqual([':0']);
  });

  it('reads the database of a service: engine, host, port, name and user, never the password', async () => {
    const { body } = await sendCall(base, carol.apiKey, callOf('/database'), vars);
    expect(body).toMatchObject({
      engine: 'postgres',
      host: '127.0.0.1',
      port: secrets.db!.port,
      name: 'app',
      user: 'app',
      addon: 'db',
      variable: 'DATABASE_URL',
    });
    const res = await raw(carol, callOf('/database'));
    const answered = JSON.stringify(body) + JSON.stringify([...res.headers]);
    for (const secret of [secrets.db!.credentials.password, secrets.db!.credentials.adminPassword!]) expect(answered).not.toContain(secret);
    expect(answered).not.toMatch(/postgres:\/\//);
    expect(res.headers.get('warning')).toMatch(/slipway addons psql db/);
    expect((await raw(mallory, callOf('/database'))).status).toBe(403);
  });
});
