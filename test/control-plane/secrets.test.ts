/**
 * Secret values, passwords, API keys and session tokens never leave the server: not in any
 * response body of any GET route, not in error messages, not in the server's log output.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationsRepository, ConfigurationsService } from '../../src/modules/configurations/index.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { call, snapshotTables } from './fixtures.js';
import { fillPath, seedRouteWorld, type RouteWorld } from './route-fixtures.js';

let h: Harness;
let world: RouteWorld;
const secrets: string[] = [];
const responses: string[] = [];
const mark = (label: string) => {
  const s = `${label}-${randomBytes(10).toString('hex')}`;
  secrets.push(s);
  return s;
};

beforeAll(async () => {
  h = await createHarness();
  world = await seedRouteWorld(h);
  secrets.push(world.secretVar.value, world.owner.password, world.owner.apiKey);
  const base = `/v1/configurations/${world.app.id}`;
  const record = (r: { raw: string }) => {
    responses.push(r.raw);
    return r;
  };

  record(await call(h, 'POST', base, world.owner, { name: 'STRIPE_KEY', value: mark('stripe'), secret: true, buildtime: true }));
  record(
    await call(h, 'POST', `${base}/bulk`, world.owner, {
      raw: `RAW_SECRET="${mark('raw')}"\nexport OTHER='${mark('other')}'`,
      secret: true,
    }),
  );
  record(await call(h, 'POST', `${base}/bulk`, world.owner, { variables: { VAR_SECRET: mark('var') }, secret: true }));
  // Replacing a secret's value, and turning a plain value into a secret.
  record(await call(h, 'PATCH', `${base}/${world.secretVar.id}`, world.owner, { value: mark('replaced') }));
  const plain = await call(h, 'POST', base, world.owner, { name: 'SOON_SECRET', value: mark('soon') });
  record(await call(h, 'PATCH', `${base}/${plain.body.id}`, world.owner, { secret: true }));
  // Refused writes that carry a secret value must not echo it.
  record(await call(h, 'PATCH', `${base}/${world.secretVar.id}`, world.owner, { value: mark('refused'), secret: 'yes' }));
  record(await call(h, 'POST', base, world.owner, { name: 'STRIPE_KEY', value: mark('duplicate'), secret: true }));
  record(await call(h, 'POST', `${base}/bulk`, world.owner, { variables: { 'BAD-NAME': mark('badname') }, secret: true }));
  record(
    await call(h, 'POST', `${base}/bulk`, world.owner, { raw: `YAML_STYLE: ${mark('yaml')}\nUNCLOSED="${mark('unclosed')}`, secret: true }),
  );
  // A multi-line key in single quotes (which dotenv does not continue): its lines are malformed, never echoed.
  const keyLine = `MIIEvQIBADANBgkq${randomBytes(12).toString('hex')}`;
  secrets.push(keyLine);
  const pem = await call(h, 'POST', `${base}/bulk`, world.owner, {
    raw: `PEM_KEY='-----BEGIN PRIVATE KEY-----\n${keyLine}\n-----END PRIVATE KEY-----'`,
    secret: true,
  });
  record(pem);
  expect(pem.body.errors.map((e: { name: string }) => e.name)).toEqual(['PEM_KEY', 'line 2', 'line 3']);
  // Secrets at the other scopes, through the shared service.
  const config = new ConfigurationsService(h.ctx.db, new ConfigurationsRepository(h.ctx.db), h.ctx.secrets);
  await config.create({ scope: 'organization', scopeId: world.org.id }, { name: 'ORG_SECRET', value: mark('org'), secret: true });
  await config.create({ scope: 'project', scopeId: world.project.id }, { name: 'PROJECT_SECRET', value: mark('project'), secret: true });
  await config.create({ scope: 'environment', scopeId: world.environmentId }, { name: 'ENV_SECRET', value: mark('env'), secret: true });

  // Credentials in flight: a login (password in the body), a failed login, a new API key, a session.
  const login = await h.app.inject({
    method: 'POST',
    url: '/v1/auth/login',
    payload: { email: world.owner.email, password: world.owner.password },
  });
  const session = login.cookies.find((c) => c.name === 'slipway_session')!.value;
  secrets.push(session);
  await h.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: world.owner.email, password: mark('wrong-password') } });
  await h.app.inject({ method: 'GET', url: '/v1/organizations', cookies: { slipway_session: session } });
  const key = await call(h, 'POST', '/v1/auth/api-keys', world.owner, { name: 'leak-check' });
  secrets.push(key.body.key); // its creation response is the one place it appears, by design
  await call(h, 'GET', '/v1/auth/session', null, undefined, { 'x-api-key': key.body.key });
});
afterAll(async () => {
  await h?.close();
});

function leaks(text: string): string[] {
  return secrets.filter((s) => text.includes(s));
}

describe('secrets', () => {
  it('the API agrees the secrets exist (and masks them)', async () => {
    const list = await call(h, 'GET', `/v1/configurations/${world.app.id}`, world.owner);
    const masked = list.body.filter((v: any) => v.secret);
    expect(masked.map((v: any) => v.name).sort()).toEqual([
      'DATABASE_PASSWORD',
      'OTHER',
      'RAW_SECRET',
      'SOON_SECRET',
      'STRIPE_KEY',
      'VAR_SECRET',
    ]);
    for (const v of masked) expect(v.value).toBe('**secret**');
  });

  it('appear in no response of the writes that set them, nor of refused writes', () => {
    expect(responses.length).toBeGreaterThan(5);
    for (const r of responses) expect(leaks(r)).toEqual([]);
  });

  it('appear in no response of any GET route', async () => {
    const found: string[] = [];
    // Event streams stay open (inject would wait forever): test/streams checks them over real connections.
    for (const route of h.app.routeTable.filter((r) => r.method === 'GET' && !r.stream)) {
      const res = await call(h, 'GET', fillPath(route, world), world.owner);
      const leaked = leaks(res.raw);
      if (leaked.length > 0) found.push(`${route.url}: ${leaked.length} secret(s)`);
    }
    expect(found, found.join('\n')).toEqual([]);
  });

  it('are stored sealed or hashed: no secret, password, key or token in any table', async () => {
    const tables = await snapshotTables(h);
    expect(Object.keys(tables)).toContain('config_vars');
    expect(leaks(JSON.stringify(tables))).toEqual([]);
  });

  it("appear nowhere in the server's log output", () => {
    const logs = h.logs();
    expect(logs.length).toBeGreaterThan(1000); // the log really was captured
    expect(leaks(logs)).toEqual([]);
  });
});
