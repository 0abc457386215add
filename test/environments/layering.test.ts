import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';

let h: Harness;
let alice: TestUser;
let appId: string;
const P = '/workspaces/acme/projects/shop';
const VIEW = `${P}/envs/staging/services/web/config`;

const call = (method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: alice.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

/** Where each scope's variables are written (the service scope is the application's own config). */
const scopeUrl = () => ({
  workspace: '/workspaces/acme/config',
  team: '/workspaces/acme/teams/core/config',
  project: `${P}/config`,
  environment: `${P}/envs/staging/config`,
  service: `/configurations/${appId}`,
});
type Scope = keyof ReturnType<typeof scopeUrl>;
const ORDER: Scope[] = ['workspace', 'team', 'project', 'environment', 'service'];

async function view() {
  const res = await call('GET', VIEW);
  expect(res.statusCode).toBe(200);
  return res.json() as {
    scopes: Array<{ scope: string; slug: string }>;
    variables: Array<{ name: string; value: string; secret: boolean; scope: string; overrides: string[]; config_id: string }>;
  };
}
const entry = async (name: string) => (await view()).variables.find((v) => v.name === name);

beforeAll(async () => {
  h = await createHarness();
  alice = await h.user();
  const ws = (await call('POST', '/workspaces', { name: 'Acme' })).json();
  const project = (await call('POST', '/projects', { name: 'Shop', organization_id: ws.id })).json();
  appId = (await call('POST', '/applications', { name: 'web', project_id: project.id })).json().id;
  await call('POST', `${P}/envs`, { name: 'staging' });
  await call('POST', '/workspaces/acme/teams', { name: 'Core' });
  expect((await call('PATCH', P, { team: 'core' })).statusCode).toBe(200);
});
afterAll(async () => {
  await h?.close();
});

describe('layered configuration', () => {
  it('resolves workspace → team → project → environment → service, the lower scope winning', async () => {
    const ids: Partial<Record<Scope, string>> = {};
    // LEVEL is set at every scope; each ONLY_<scope> at one scope.
    for (const scope of ORDER) {
      const res = await call('POST', scopeUrl()[scope], { name: 'LEVEL', value: `from-${scope}` });
      expect(res.statusCode, scope).toBe(201);
      ids[scope] = res.json().id;
      expect((await call('POST', scopeUrl()[scope], { name: `ONLY_${scope.toUpperCase()}`, value: scope })).statusCode).toBe(201);
    }
    const v = await view();
    expect(v.scopes.map((s) => `${s.scope}:${s.slug}`)).toEqual([
      'workspace:acme',
      'team:core',
      'project:shop',
      'environment:staging',
      'service:web',
    ]);
    expect(v.variables.find((x) => x.name === 'LEVEL')).toMatchObject({
      value: 'from-service',
      scope: 'service',
      config_id: ids.service,
      overrides: ['workspace', 'team', 'project', 'environment'],
    });
    for (const scope of ORDER) {
      expect(v.variables.find((x) => x.name === `ONLY_${scope.toUpperCase()}`)).toMatchObject({ value: scope, scope, overrides: [] });
    }

    // Deleting the override at each level, lowest first, falls back to the next higher one.
    const deleteUrl = (scope: Scope) => `${scopeUrl()[scope]}/${ids[scope]}`;
    for (let i = ORDER.length - 1; i > 0; i--) {
      expect((await call('DELETE', deleteUrl(ORDER[i]!))).statusCode, ORDER[i]).toBe(200);
      expect(await entry('LEVEL')).toMatchObject({ value: `from-${ORDER[i - 1]}`, scope: ORDER[i - 1], overrides: ORDER.slice(0, i - 1) });
    }
    expect((await call('DELETE', deleteUrl('workspace'))).statusCode).toBe(200);
    expect(await entry('LEVEL')).toBeUndefined();
  });

  it('applies team config only to projects of that team', async () => {
    await call('POST', '/workspaces/acme/teams/core/config', { name: 'TEAM_ONLY', value: 'core' });
    expect(await entry('TEAM_ONLY')).toMatchObject({ value: 'core', scope: 'team' });
    await call('PATCH', P, { team: null });
    expect(await entry('TEAM_ONLY')).toBeUndefined();
    expect((await view()).scopes.map((s) => s.scope)).toEqual(['workspace', 'project', 'environment', 'service']);
    await call('PATCH', P, { team: 'core' });
  });

  it('masks secrets set at every scope, in lists and in the resolved view', async () => {
    const secretValues: string[] = [];
    for (const scope of ORDER) {
      const value = `hunter2-${scope}-${Math.random().toString(36).slice(2)}`;
      secretValues.push(value);
      const res = await call('POST', scopeUrl()[scope], { name: `SECRET_${scope.toUpperCase()}`, value, secret: true });
      expect(res.statusCode, scope).toBe(201);
      expect(res.json().value).toBe('**secret**');
      const list = await call('GET', scopeUrl()[scope]);
      expect(list.json().find((x: { name: string }) => x.name === `SECRET_${scope.toUpperCase()}`)).toMatchObject({
        value: '**secret**',
        secret: true,
      });
      for (const s of secretValues) expect(list.body).not.toContain(s);
      const one = await call('GET', `${scopeUrl()[scope]}/${res.json().id}`);
      expect(one.json().value).toBe('**secret**');
    }
    const res = await call('GET', VIEW);
    for (const scope of ORDER) {
      expect(res.json().variables.find((x: { name: string }) => x.name === `SECRET_${scope.toUpperCase()}`)).toMatchObject({
        value: '**secret**',
        secret: true,
        scope,
      });
    }
    for (const s of secretValues) {
      expect(res.body).not.toContain(s);
      expect(h.logs()).not.toContain(s);
    }
    // The stored values are sealed, never plain.
    const rows = await h.ctx.db.selectFrom('config_vars').select(['value', 'value_sealed']).where('secret', '=', true).execute();
    expect(rows).toHaveLength(ORDER.length);
    for (const r of rows) {
      expect(r.value).toBeNull();
      for (const s of secretValues) expect(r.value_sealed).not.toContain(s);
    }
  });

  it('answers 404 for an unknown service or environment', async () => {
    expect((await call('GET', `${P}/envs/staging/services/nope/config`)).statusCode).toBe(404);
    expect((await call('GET', `${P}/envs/nope/services/web/config`)).statusCode).toBe(404);
  });
});
