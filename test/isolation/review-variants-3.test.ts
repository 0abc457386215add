import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { seedApplication, type SeededApplication } from '../helpers/seed.js';
import { basic, decodeJwt } from '../registry/fixtures.js';
import { sandboxMissing } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 34 follow-up, third adversarial review (issues 27/31/32/34): what the previous stop
 * landed without an independent review, tried by a hostile member through the HTTP API.
 */
let h: Harness;
let owner: TestUser;
let mine: SeededApplication;
let sibling: string;
let elsewhere: string;

const repository = (s: SeededApplication) => `${s.org.slug}/${s.project.slug}/${s.app.slug}`;

async function createKey(body: object): Promise<string> {
  const res = await h.app.inject({ method: 'POST', url: '/v1/auth/api-keys', headers: owner.headers, payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().key;
}

async function registryToken(password: string, names: string[], extra = '') {
  const scopes = names.map((n) => `scope=${encodeURIComponent(`repository:${n}:pull,push,delete`)}`).join('&');
  const res = await h.app.inject({
    method: 'GET',
    url: `/v1/integrations/docker/auth?service=slipway-registry&${scopes}${extra}`,
    headers: { authorization: basic('u', password) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { token: string; refresh_token?: string };
}

const granted = (token: string) =>
  Object.fromEntries((decodeJwt(token).claims.access as Array<{ name: string; actions: string[] }>).map((a) => [a.name, a.actions]));

beforeAll(async () => {
  // The runtime runs add-on servers (sandboxed); nothing here deploys.
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0 }, { jobs: true, runtime: true });
  owner = await h.user();
  mine = await seedApplication(h, owner, { org: 'Review Three', project: 'Web', app: 'Api' });
  const second = await h.app.inject({
    method: 'POST',
    url: '/v1/applications',
    headers: owner.headers,
    payload: { name: 'Worker', project_id: mine.project.id },
  });
  expect(second.statusCode, second.body).toBe(201);
  sibling = `${mine.org.slug}/${mine.project.slug}/${second.json().slug}`;
  elsewhere = repository(await seedApplication(h, owner, { org: 'Review Three Other', project: 'Web', app: 'Api' }));
});
afterAll(async () => {
  await h?.close();
});

describe('registry tokens of a scoped API key', () => {
  const scopeOf = () => ({ organization: mine.org.slug, project: mine.project.slug, application: mine.app.slug });

  it('a read-only key of one application pulls that application only: no push, no delete, nothing elsewhere', async () => {
    const key = await createKey({ name: 'read one app', ...scopeOf(), actions: ['read'] });
    const access = granted((await registryToken(key, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull'], [sibling]: [], [elsewhere]: [] });
  });

  it("a deploy token pushes and pulls its application's images but deletes none, and reaches no other repository", async () => {
    const key = await createKey({ name: 'ci', kind: 'deploy_token', ...scopeOf(), environment: 'production' });
    const access = granted((await registryToken(key, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull', 'push'], [sibling]: [], [elsewhere]: [] });
  });

  it('a refresh token keeps the limits of the key it was issued to', async () => {
    const key = await createKey({ name: 'offline', ...scopeOf(), actions: ['read'] });
    const refresh = (await registryToken(key, [], '&offline_token=true')).refresh_token!;
    expect(refresh).toEqual(expect.any(String));
    const access = granted((await registryToken(refresh, [repository(mine), sibling, elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull'], [sibling]: [], [elsewhere]: [] });
  });

  it('a key without limits still gets every member action', async () => {
    const access = granted((await registryToken(owner.apiKey, [repository(mine), elsewhere])).token);
    expect(access).toEqual({ [repository(mine)]: ['pull', 'push', 'delete'], [elsewhere]: ['pull', 'push', 'delete'] });
  });
});

const missing = sandboxMissing();
describe.skipIf(missing)("`slipway addons psql`: the answer is bounded, the server's output past it never read", () => {
  const query = (sql: string) =>
    h.app.inject({ method: 'POST', url: `/v1/organizations/${mine.org.slug}/addons/db/query`, headers: owner.headers, payload: { sql } });

  beforeAll(async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${mine.org.slug}/addons`,
      headers: owner.headers,
      payload: { name: 'db', kind: 'postgres' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().status).toBe('running');
  }, 120_000);

  it('64 MiB of values answer the first 4 MiB, marked truncated (the platform never held the rest)', async () => {
    const res = await query(`SELECT repeat('x', 1024 * 1024) FROM generate_series(1, 64)`);
    expect(res.statusCode).toBe(200);
    expect(res.body.length).toBeLessThan(5 * 1024 * 1024);
    expect(res.json()).toMatchObject({ columns: ['repeat'], row_count: null, truncated: true });
    expect(res.json().rows).toHaveLength(4);
  });

  it('a billion rows answer 1000, and the statement stops on the server', async () => {
    const res = await query('SELECT generate_series(1, 1000000000)');
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    expect(res.json()).toMatchObject({ row_count: null, truncated: true });
    expect(res.json().rows).toHaveLength(1000);
    expect(res.json().rows[999]).toEqual(['1000']);
    const running = `SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%generate_series(1, 10000%' AND pid <> pg_backend_pid()`;
    await waitFor('the cut statement to end on the server', async () => (await query(running)).json().rows[0][0] === '0', 20_000, 200);
  });

  it('the last statement of several is answered; a small answer is whole', async () => {
    const res = await query('SELECT 1; SELECT g, g * 2 AS twice FROM generate_series(1, 3) g');
    expect(res.json()).toEqual({
      command: 'SELECT',
      row_count: 3,
      columns: ['g', 'twice'],
      rows: [
        ['1', '2'],
        ['2', '4'],
        ['3', '6'],
      ],
      truncated: false,
    });
    expect((await query('CREATE TABLE t (v int)')).json()).toMatchObject({ command: 'CREATE', rows: [], truncated: false });
    expect((await query('SELEC nonsense')).statusCode).toBe(422);
  });
});
