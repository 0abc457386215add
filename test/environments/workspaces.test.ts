import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';

let h: Harness;
let alice: TestUser; // admin of acme
let carol: TestUser; // plain member of acme
let bob: TestUser; // admin of globex only

const call = (user: TestUser, method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

beforeAll(async () => {
  h = await createHarness();
  [alice, carol, bob] = [await h.user(), await h.user(), await h.user()];
  expect((await call(alice, 'POST', '/workspaces', { name: 'Acme' })).statusCode).toBe(201);
  expect((await call(bob, 'POST', '/workspaces', { name: 'Globex' })).statusCode).toBe(201);
  expect((await call(alice, 'POST', '/workspaces/acme/members', { username: carol.username })).statusCode).toBe(201);
});
afterAll(async () => {
  await h?.close();
});

describe('workspaces', () => {
  it('creates, lists and shows a workspace with counts, the same organization as /organizations', async () => {
    const created = await call(alice, 'POST', '/workspaces', { name: 'Initech Labs' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      name: 'Initech Labs',
      slug: 'initech-labs',
      member_count: 1,
      project_count: 0,
      service_count: 0,
    });

    const org = (await call(alice, 'GET', '/organizations/acme')).json();
    const project = await call(alice, 'POST', '/projects', { name: 'Shop', organization_id: org.id });
    await call(alice, 'POST', '/applications', { name: 'web', project_id: project.json().id });
    await call(alice, 'POST', '/applications', { name: 'worker', project_id: project.json().id });

    const ws = await call(alice, 'GET', '/workspaces/acme');
    expect(ws.statusCode).toBe(200);
    expect(ws.json()).toEqual({
      id: org.id,
      name: 'Acme',
      slug: 'acme',
      member_count: 2,
      project_count: 1,
      service_count: 2,
      members: [
        { user_id: alice.id, username: alice.username, email: alice.email, admin: true },
        { user_id: carol.id, username: carol.username, email: carol.email, admin: false },
      ],
      created: org.created,
      updated: expect.any(String),
    });
    const list = (await call(alice, 'GET', '/workspaces')).json();
    expect(list.map((w: { slug: string }) => w.slug)).toEqual(['acme', 'initech-labs']);
    expect((await call(alice, 'POST', '/workspaces', { name: 'Acme' })).statusCode).toBe(409);
    expect((await call(alice, 'GET', '/workspaces/nope')).statusCode).toBe(404);
  });

  it('shares members with the organization view; only admins add', async () => {
    const members = await call(carol, 'GET', '/workspaces/acme/members');
    expect(members.statusCode).toBe(200);
    const orgMembers = (await call(carol, 'GET', '/organizations/acme')).json().members;
    expect(members.json()).toEqual(orgMembers);
    expect(members.json().map((m: { username: string; admin: boolean }) => [m.username, m.admin])).toEqual([
      [alice.username, true],
      [carol.username, false],
    ]);

    const dave = await h.user();
    expect((await call(carol, 'POST', '/workspaces/acme/members', { username: dave.username })).statusCode).toBe(403);
    const added = await call(alice, 'POST', '/workspaces/acme/members', { username: dave.email });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toEqual({ user_id: dave.id, username: dave.username, email: dave.email, admin: false, role: 'developer' });
    expect((await call(alice, 'POST', '/workspaces/acme/members', { username: dave.username })).statusCode).toBe(409);
    expect((await call(dave, 'DELETE', `/workspaces/acme/members/${dave.id}`)).statusCode).toBe(200);
    expect((await call(dave, 'GET', '/workspaces/acme')).statusCode).toBe(403);
  });

  it('keeps workspace config with secrets masked; set replaces by name', async () => {
    const created = await call(carol, 'POST', '/workspaces/acme/config', { name: 'LOG_LEVEL', value: 'info' });
    expect(created.statusCode).toBe(201);
    const replaced = await call(carol, 'POST', '/workspaces/acme/config', { name: 'log_level', value: 'debug', buildtime: true });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json()).toMatchObject({ id: created.json().id, name: 'LOG_LEVEL', value: 'debug', buildtime: true, secret: false });
    const secret = await call(carol, 'POST', '/workspaces/acme/config', { name: 'SENTRY_DSN', value: 'https://key@sentry', secret: true });
    expect(secret.json().value).toBe('**secret**');
    const list = await call(alice, 'GET', '/workspaces/acme/config');
    expect(list.json().map((v: { name: string; value: string }) => [v.name, v.value])).toEqual([
      ['LOG_LEVEL', 'debug'],
      ['SENTRY_DSN', '**secret**'],
    ]);
    expect(list.body).not.toContain('key@sentry');
    expect((await call(alice, 'POST', '/workspaces/acme/config', { name: '1BAD', value: 'x' })).statusCode).toBe(422);
  });

  it('refuses other workspaces with 403 and unknown ones with 404', async () => {
    const secret = (await call(alice, 'GET', '/workspaces/acme/config')).json()[0];
    for (const [method, url, payload] of [
      ['GET', '/workspaces/acme'],
      ['GET', '/workspaces/acme/members'],
      ['GET', '/workspaces/acme/config'],
      ['POST', '/workspaces/acme/config', { name: 'X', value: 'y' }],
      ['POST', '/workspaces/acme/members', { username: bob.username }],
      ['GET', `/workspaces/acme/config/${secret.id}`],
      ['DELETE', `/workspaces/acme/config/${secret.id}`],
      ['GET', '/workspaces/acme/projects'],
      ['PATCH', '/workspaces/acme/projects/shop', { team: null }],
    ] as const) {
      const res = await call(bob, method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json()).toEqual({ status: 403, message: expect.any(String) });
    }
    // bob's own workspace does not reach acme's variable by id.
    expect((await call(bob, 'GET', `/workspaces/globex/config/${secret.id}`)).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/v1/workspaces' })).statusCode).toBe(401);
  });
});

describe('teams', () => {
  it('creates teams with members (admins), lists them and adds/removes members', async () => {
    expect((await call(carol, 'POST', '/workspaces/acme/teams', { name: 'Platform' })).statusCode).toBe(403);
    const team = await call(alice, 'POST', '/workspaces/acme/teams', { name: 'Platform', members: [carol.username] });
    expect(team.statusCode).toBe(201);
    expect(team.json()).toEqual({
      id: expect.any(String),
      name: 'Platform',
      slug: 'platform',
      projects: [],
      members: [{ user_id: carol.id, username: carol.username, email: carol.email }],
      created: expect.any(String),
    });
    expect((await call(alice, 'POST', '/workspaces/acme/teams', { name: 'Platform' })).statusCode).toBe(409);
    // Only workspace members can join a team.
    const outsider = await call(alice, 'POST', '/workspaces/acme/teams/platform/members', { username: bob.username });
    expect(outsider.statusCode).toBe(422);
    const withAlice = await call(alice, 'POST', '/workspaces/acme/teams/platform/members', { username: alice.username });
    expect(withAlice.json().members.map((m: { username: string }) => m.username)).toEqual([carol.username, alice.username]);
    expect((await call(alice, 'DELETE', `/workspaces/acme/teams/platform/members/${alice.id}`)).statusCode).toBe(200);
    const list = await call(carol, 'GET', '/workspaces/acme/teams');
    expect(list.json().map((t: { slug: string; members: unknown[] }) => [t.slug, t.members.length])).toEqual([['platform', 1]]);
    expect((await call(bob, 'GET', '/workspaces/acme/teams')).statusCode).toBe(403);
    expect((await call(bob, 'POST', '/workspaces/acme/teams', { name: 'Evil' })).statusCode).toBe(403);
    expect((await call(bob, 'GET', '/workspaces/acme/teams/platform/config')).statusCode).toBe(403);
    expect((await call(carol, 'GET', '/workspaces/acme/teams/nope')).statusCode).toBe(404);
  });

  it('assigns a project to a team and keeps team config', async () => {
    const moved = await call(carol, 'PATCH', '/workspaces/acme/projects/shop', { team: 'platform' });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({
      slug: 'shop',
      workspace: 'acme',
      team: 'platform',
      services: ['web', 'worker'],
      environments: ['production'],
    });
    expect((await call(carol, 'GET', '/workspaces/acme/teams/platform')).json().projects).toEqual(['shop']);
    expect((await call(carol, 'PATCH', '/workspaces/acme/projects/shop', { team: 'nope' })).statusCode).toBe(404);

    const v = await call(carol, 'POST', '/workspaces/acme/teams/platform/config', { name: 'TEAM_TOKEN', value: 't0p', secret: true });
    expect(v.statusCode).toBe(201);
    expect(v.json().value).toBe('**secret**');
    const list = await call(carol, 'GET', '/workspaces/acme/teams/platform/config');
    expect(list.json()).toEqual([expect.objectContaining({ name: 'TEAM_TOKEN', value: '**secret**', secret: true })]);
    expect(list.body).not.toContain('t0p');
  });

  it('deleting a team keeps its projects, without a team', async () => {
    await call(alice, 'POST', '/workspaces/acme/teams', { name: 'Temp' });
    await call(alice, 'POST', '/workspaces/acme/teams/temp/config', { name: 'A', value: '1' });
    await call(alice, 'POST', '/projects', { name: 'Scratch', organization_id: (await call(alice, 'GET', '/workspaces/acme')).json().id });
    await call(alice, 'PATCH', '/workspaces/acme/projects/scratch', { team: 'temp' });
    expect((await call(carol, 'DELETE', '/workspaces/acme/teams/temp')).statusCode).toBe(403);
    expect((await call(alice, 'DELETE', '/workspaces/acme/teams/temp')).statusCode).toBe(200);
    expect((await call(alice, 'GET', '/workspaces/acme/projects/scratch')).json().team).toBeNull();
    const orphans = await h.ctx.db.selectFrom('config_vars').select('id').where('scope', '=', 'team').where('name', '=', 'A').execute();
    expect(orphans).toEqual([]);
  });
});
