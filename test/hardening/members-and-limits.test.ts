/**
 * Issue 20, through the HTTP API against PostgreSQL: the protected-environment bypasses as
 * the review reproduced them, lockout and e-mail enumeration, a 20,000-variable bulk, and
 * team configuration changed from outside the team.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, snapshotTables, unique } from '../control-plane/fixtures.js';

let h: Harness;
let admin: TestUser;
let member: TestUser;
let org: { id: string; slug: string };
let project: { id: string; slug: string };
let appId: string;

beforeAll(async () => {
  h = await createHarness({ CONFIG_MAX_BYTES_PER_SCOPE: 64 * 1024 });
  admin = await h.user();
  member = await h.user();
  org = (await call(h, 'POST', '/v1/organizations', admin, { name: unique('Acme') })).body;
  expect((await call(h, 'POST', `/v1/organizations/${org.slug}/members`, admin, { username: member.username })).status).toBeLessThan(300);
  project = (await call(h, 'POST', '/v1/projects', admin, { name: 'Shop', organization_id: org.id })).body;
  appId = (await call(h, 'POST', '/v1/applications', admin, { name: 'Web', project_id: project.id })).body.id;
});
afterAll(async () => {
  await h?.close();
});

const ws = () => `/v1/workspaces/${org.slug}`;
const envs = () => `${ws()}/projects/${project.slug}/envs`;

describe('protected production, as the review reproduced it', () => {
  it('a plain member cannot scale it to zero, set its configuration, or point it at another repository; an admin can', async () => {
    expect((await call(h, 'PATCH', `${envs()}/production`, admin, { protected: true })).status).toBe(200);
    const before = await snapshotTables(h);
    const refused = [
      await call(h, 'POST', `/v1/applications/${appId}/scale`, member, { process_counts: { web: 0 } }),
      await call(h, 'POST', `${envs()}/production/config`, member, { name: 'NODE_OPTIONS', value: '--require /tmp/evil.js' }),
      await call(h, 'POST', `/v1/configurations/${appId}`, member, { name: 'LD_PRELOAD', value: '/tmp/evil.so' }),
      await call(h, 'POST', `${ws()}/config`, member, { name: 'LD_PRELOAD', value: '/tmp/evil.so' }),
      await call(h, 'POST', `${ws()}/projects/${project.slug}/config`, member, { name: 'LD_PRELOAD', value: '/tmp/evil.so' }),
      await call(h, 'PATCH', `/v1/applications/${appId}/settings`, member, { github_repository: 'member/evil' }),
      await call(h, 'PATCH', `/v1/applications/${appId}/settings`, member, { subdirectory: 'other' }),
      await call(h, 'PATCH', `/v1/applications/${appId}/settings`, member, { health_check_path: '/nothing' }),
      await call(h, 'PATCH', `${envs()}/production`, member, { process_counts: { web: { web: 0 } } }),
      await call(h, 'POST', '/v1/applications', member, { name: 'Sneaky', project_id: project.id }),
    ];
    for (const res of refused) {
      expectError(res, 403);
      expect(res.body.message).toMatch(/protected/);
    }
    expect(await snapshotTables(h)).toEqual(before);

    expect((await call(h, 'POST', `/v1/applications/${appId}/scale`, admin, { process_counts: { web: 2 } })).status).toBe(200);
    expect((await call(h, 'POST', `${envs()}/production/config`, admin, { name: 'GREETING', value: 'hi' })).status).toBe(201);
    expect((await call(h, 'PATCH', `/v1/applications/${appId}/settings`, admin, { github_repository: 'acme/shop' })).status).toBe(200);
    // A member still reads everything, and changes what no protected environment inherits.
    expect((await call(h, 'GET', `/v1/configurations/${appId}`, member)).status).toBe(200);
    expect((await call(h, 'POST', envs(), member, { name: 'Sandbox' })).status).toBe(201);
    expect((await call(h, 'POST', `${envs()}/sandbox/config`, member, { name: 'GREETING', value: 'sandbox' })).status).toBe(201);
    expect((await call(h, 'PATCH', `${envs()}/production`, admin, { protected: false })).status).toBe(200);
  });
});

describe('login lockout', () => {
  const login = (email: string, password: string, remoteAddress: string) =>
    h.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password }, remoteAddress });

  it("a stranger's bad guesses from one address never lock the owner out, and slow the stranger down", async () => {
    const victim = await h.user();
    const codes: number[] = [];
    for (let i = 0; i < 15; i++) codes.push((await login(victim.email, 'guess', '203.0.113.66')).statusCode);
    expect(codes.slice(0, 3)).toEqual([401, 401, 401]);
    // From the fourth attempt on the stranger waits (backoff); nothing they do reaches the account.
    expect(codes[3]).toBe(429);
    const waiting = await login(victim.email, victim.password, '203.0.113.66');
    expectError({ status: waiting.statusCode, body: waiting.json() }, 429);
    expect(waiting.json().message).toMatch(/retry in \d+ s/);
    // The owner, from their own address, logs in at once.
    expect((await login(victim.email, victim.password, '198.51.100.20')).statusCode).toBe(200);
  });

  it('the wait grows: once it has passed, one more wrong guess earns a longer one', async () => {
    const victim = await h.user();
    for (let i = 0; i < 3; i++) expect((await login(victim.email, 'guess', '203.0.113.77')).statusCode).toBe(401);
    const pair = `pair:203.0.113.77|${victim.email.toLowerCase()}`;
    const passTime = (seconds: number) =>
      h.ctx.db
        .updateTable('login_failures')
        .set({ last_failed_at: new Date(Date.now() - seconds * 1000) })
        .where('key', '=', pair)
        .execute();
    await passTime(2);
    expect((await login(victim.email, 'guess', '203.0.113.77')).statusCode).toBe(401);
    await passTime(1.5);
    const second = await login(victim.email, 'guess', '203.0.113.77');
    expect(second.statusCode).toBe(429);
    await passTime(3);
    expect((await login(victim.email, victim.password, '203.0.113.77')).statusCode).toBe(200);
  });
});

describe('members and their e-mail', () => {
  it("admins see every member's e-mail; a plain member sees only their own", async () => {
    const team = (await call(h, 'POST', `${ws()}/teams`, admin, { name: unique('ops'), members: [member.username, admin.username] })).body;
    const asMember = [
      (await call(h, 'GET', `/v1/organizations/${org.slug}`, member)).body.members,
      (await call(h, 'GET', `${ws()}/members`, member)).body,
      (await call(h, 'GET', `${ws()}/teams/${team.slug}`, member)).body.members,
      (await call(h, 'GET', `${ws()}/teams`, member)).body.find((t: { slug: string }) => t.slug === team.slug).members,
    ];
    for (const members of asMember) {
      const adminSeen = members.find((m: { user_id: string }) => m.user_id === admin.id);
      const selfSeen = members.find((m: { user_id: string }) => m.user_id === member.id);
      expect(adminSeen).toBeDefined();
      expect(adminSeen.email).toBeUndefined();
      expect(selfSeen.email).toBe(member.email);
      expect(JSON.stringify(members)).not.toContain(admin.email);
    }
    const asAdmin = (await call(h, 'GET', `/v1/organizations/${org.slug}`, admin)).body.members;
    expect(asAdmin.find((m: { user_id: string }) => m.user_id === member.id).email).toBe(member.email);
  });
});

describe('configuration size', () => {
  it('a bulk of 20,000 variables is refused with 422 and stores nothing', async () => {
    const variables = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`VAR_${i}`, 'x']));
    const before = await snapshotTables(h);
    expectError(await call(h, 'POST', `/v1/configurations/${appId}/bulk`, admin, { variables }), 422);
    // The sandbox already holds GREETING: 1,000 more would make 1,001, one past the default cap.
    const entries = Array.from({ length: 1000 }, (_, i) => ({ name: `VAR_${i}`, value: 'x' }));
    const onto = await call(h, 'POST', `${envs()}/sandbox/config/bulk`, admin, entries);
    expectError(onto, 422);
    expect(await snapshotTables(h)).toEqual(before);
  });

  it('the total size per scope is capped (CONFIG_MAX_BYTES_PER_SCOPE) for bulk and single writes alike', async () => {
    const big = 'v'.repeat(20 * 1024);
    const before = await snapshotTables(h);
    expectError(await call(h, 'POST', `/v1/configurations/${appId}/bulk`, admin, { variables: { A: big, B: big, C: big, D: big } }), 422);
    expect(await snapshotTables(h)).toEqual(before);
    for (const name of ['A', 'B', 'C'])
      expect((await call(h, 'POST', `/v1/configurations/${appId}`, admin, { name, value: big })).status).toBe(201);
    expectError(await call(h, 'POST', `/v1/configurations/${appId}`, admin, { name: 'D', value: big }), 422);
  });
});

describe('team configuration', () => {
  it("only the team's members and workspace admins change it; other members read it", async () => {
    const outsider = await h.user();
    expect((await call(h, 'POST', `/v1/organizations/${org.slug}/members`, admin, { username: outsider.username })).status).toBeLessThan(
      300,
    );
    const team = (await call(h, 'POST', `${ws()}/teams`, admin, { name: unique('data'), members: [member.username] })).body;
    const config = `${ws()}/teams/${team.slug}/config`;
    const before = await snapshotTables(h);
    for (const [method, url, payload] of [
      ['POST', config, { name: 'TEAM_VAR', value: 'x' }],
      ['POST', `${config}/bulk`, [{ name: 'TEAM_VAR', value: 'x' }]],
    ] as const)
      expectError(await call(h, method, url, outsider, payload), 403);
    expect(await snapshotTables(h)).toEqual(before);
    const set = await call(h, 'POST', config, member, { name: 'TEAM_VAR', value: 'by-member' });
    expect(set.status).toBe(201);
    expectError(await call(h, 'PATCH', `${config}/${set.body.id}`, outsider, { value: 'x' }), 403);
    expectError(await call(h, 'DELETE', `${config}/${set.body.id}`, outsider), 403);
    expect((await call(h, 'GET', config, outsider)).body.map((v: { name: string }) => v.name)).toEqual(['TEAM_VAR']);
    expect((await call(h, 'PATCH', `${config}/${set.body.id}`, admin, { value: 'by-admin' })).status).toBe(200);
  });
});
