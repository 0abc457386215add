/**
 * Roles per organization (issue 32) through the HTTP API: the route table walked with each role
 * (every write a role is refused answers 403 and changes nothing; every read a viewer is given
 * succeeds), secret values never shown, protected environments opened by a grant, the owner's
 * switch for viewers' logs, and the escalation attempts refused and audited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/app.js';
import { grantRole } from '../../src/modules/organizations/index.js';
import { ROLES, routeVerdict, type Role } from '../../src/platform/access/roles.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, snapshotTables } from '../control-plane/fixtures.js';
import { fillPath, sampleBody, seedRouteWorld, type RouteWorld } from '../control-plane/route-fixtures.js';

let h: Harness;
let world: RouteWorld;
let routes: RouteEntry[];
const members = {} as Record<Role, TestUser>;
const key = (r: RouteEntry) => `${r.method} ${r.url}`;

beforeAll(async () => {
  h = await createHarness();
  world = await seedRouteWorld(h);
  members.owner = world.owner;
  for (const role of ROLES.filter((r) => r !== 'owner')) {
    members[role] = await h.user();
    const res = await call(h, 'POST', `/v1/organizations/${world.org.slug}/members`, world.owner, {
      username: members[role].username,
      role,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  routes = h.app.routeTable.filter((r) => r.url.startsWith('/v1/'));
});
afterAll(async () => {
  await h?.close();
});

describe('the route table with each role', () => {
  it('every write a role is refused answers 403 with the role named, and changes nothing', async () => {
    const before = await snapshotTables(h);
    const failures: string[] = [];
    const refusedCount: Record<string, number> = {};
    for (const role of ROLES) {
      const refused = routes.filter((r) => r.method !== 'GET' && routeVerdict(r, role) === 'refused');
      refusedCount[role] = refused.length;
      for (const route of refused) {
        const res = await call(h, route.method, fillPath(route, world), members[role], sampleBody(route, world));
        if (res.status !== 403 || !String(res.body?.message).includes(`is ${role}`))
          failures.push(`${role}: ${key(route)} → ${res.status} ${res.raw.slice(0, 160)}`);
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(await snapshotTables(h)).toEqual(before);
    // The table means something: viewers change nothing, deployers are kept from settings and configuration.
    expect(refusedCount.owner).toBe(0);
    expect(refusedCount.viewer).toBeGreaterThan(refusedCount.deployer!);
    expect(refusedCount.deployer).toBeGreaterThan(refusedCount.developer!);
    expect(routes.filter((r) => routeVerdict(r, 'deployer') === 'refused').map(key)).toEqual(
      expect.arrayContaining(['POST /v1/configurations/:application_id', 'PATCH /v1/applications/:application_id/settings']),
    );
    expect(routes.filter((r) => routeVerdict(r, 'deployer') === 'unprotected').map(key)).toContain(
      'POST /v1/applications/:application_id/scale',
    );
  });

  it('a viewer reads every GET route the table gives it', async () => {
    const failures: string[] = [];
    const reads = routes.filter((r) => r.method === 'GET' && !r.stream && routeVerdict(r, 'viewer') === 'allowed');
    for (const route of reads.filter((r) => r.url !== '/v1/integrations/github/setup')) {
      const res = await call(h, 'GET', fillPath(route, world), members.viewer);
      if (res.status >= 400) failures.push(`${key(route)} → ${res.status} ${res.raw.slice(0, 160)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
});

describe('roles', () => {
  it('a viewer never reads a secret value, and cannot write one', async () => {
    const res = await call(h, 'GET', `/v1/configurations/${world.app.id}`, members.viewer);
    expect(res.status).toBe(200);
    expect(res.raw).not.toContain(world.secretVar.value);
    expect(res.body).toContainEqual(expect.objectContaining({ name: world.secretVar.name, secret: true, value: '**secret**' }));
    const write = await call(h, 'POST', `/v1/configurations/${world.app.id}`, members.viewer, { name: 'X', value: 'y' });
    expectError(write, 403);
    expect(write.body.message).toBe(`Your role in organization '${world.org.slug}' is viewer; this request needs 'config:write'`);
  });

  it('a deployer scales outside protected environments; production needs a grant, which an admin gives', async () => {
    const env = `/v1/workspaces/${world.org.slug}/projects/${world.project.slug}/envs/production`;
    const scale = () => call(h, 'POST', `/v1/applications/${world.app.id}/scale`, members.deployer, { process_counts: { web: 1 } });
    expect((await scale()).status, (await scale()).raw).toBeLessThan(300);
    expect((await call(h, 'PATCH', env, world.owner, { protected: true })).status).toBe(200);
    expectError(await scale(), 403);
    // A developer may not grant; an admin may.
    const grant = { project: world.project.slug, environment: 'production', username: members.deployer.username };
    expectError(await call(h, 'POST', `/v1/organizations/${world.org.slug}/grants`, members.developer, grant), 403);
    const granted = await call(h, 'POST', `/v1/organizations/${world.org.slug}/grants`, members.admin, grant);
    expect(granted.status, granted.raw).toBe(201);
    expect(granted.body).toContainEqual(expect.objectContaining({ environment: 'production', user_id: members.deployer.id }));
    expect((await scale()).status).toBeLessThan(300);
    // The grant opens production within the role: still no configuration writes.
    expectError(await call(h, 'POST', `/v1/configurations/${world.app.id}`, members.deployer, { name: 'X', value: 'y' }), 403);
    const revoked = await call(
      h,
      'DELETE',
      `/v1/organizations/${world.org.slug}/grants/${world.project.slug}/production/${members.deployer.id}`,
      members.admin,
    );
    expect(revoked.status).toBe(200);
    expectError(await scale(), 403);
    expect((await call(h, 'PATCH', env, world.owner, { protected: false })).status).toBe(200);
  });

  it("viewers lose protected environments' logs when the owner says so; only the owner says so", async () => {
    const logs = `/v1/applications/${world.app.id}/logs`;
    const env = `/v1/workspaces/${world.org.slug}/projects/${world.project.slug}/envs/production`;
    expect((await call(h, 'PATCH', env, world.owner, { protected: true })).status).toBe(200);
    expect((await call(h, 'GET', logs, members.viewer)).status).toBe(200);
    const settings = `/v1/organizations/${world.org.slug}/access-settings`;
    expectError(await call(h, 'PUT', settings, members.admin, { viewers_see_protected_logs: false }), 403);
    expect((await call(h, 'PUT', settings, world.owner, { viewers_see_protected_logs: false })).status).toBe(200);
    const hidden = await call(h, 'GET', logs, members.viewer);
    expectError(hidden, 403);
    expect(hidden.body.message).toContain('protected environments');
    expect((await call(h, 'GET', logs, members.deployer)).status).toBe(200);
    expect((await call(h, 'PUT', settings, world.owner, { viewers_see_protected_logs: true })).status).toBe(200);
    expect((await call(h, 'PATCH', env, world.owner, { protected: false })).status).toBe(200);
  });

  it('escalations are refused with the reason, audited, and change nothing', async () => {
    const org = `/v1/organizations/${world.org.slug}`;
    const newcomer = await h.user();
    const before = await snapshotTables(h);
    const attempts: Array<[TestUser, string, string, unknown, number]> = [
      [members.developer, 'POST', `${org}/members`, { username: newcomer.username, role: 'owner' }, 403],
      [members.developer, 'PUT', `${org}/members/${members.developer.id}/role`, { role: 'admin' }, 403],
      [members.admin, 'PUT', `${org}/members/${members.admin.id}/role`, { role: 'owner' }, 403],
      [members.admin, 'POST', `${org}/members`, { username: newcomer.username, role: 'owner' }, 403],
      [members.admin, 'PUT', `${org}/members/${world.owner.id}/role`, { role: 'viewer' }, 403],
      [members.admin, 'DELETE', `${org}/members/${world.owner.id}`, undefined, 403],
      [members.admin, 'DELETE', `/v1/workspaces/${world.org.slug}`, undefined, 403],
      [world.owner, 'DELETE', `${org}/members/${world.owner.id}`, undefined, 409],
      [world.owner, 'PUT', `${org}/members/${world.owner.id}/role`, { role: 'admin' }, 409],
      [world.owner, 'PUT', `${org}/members/${members.viewer.id}/role`, { role: 'superuser' }, 422],
    ];
    for (const [who, method, url, body, status] of attempts) expectError(await call(h, method, url, who, body), status);
    expect(await snapshotTables(h)).toEqual(before);
    const audited = await h.ctx.db
      .selectFrom('audit_log')
      .select(['after'])
      .where('denied', '=', true)
      .where('actor_user_id', 'in', [members.developer.id, members.admin.id])
      .execute();
    const messages = audited.map((r) => JSON.stringify(r.after));
    expect(messages.some((m) => m.includes('is developer; this request needs an admin or owner'))).toBe(true);
    expect(messages.some((m) => m.includes('Only an owner of the organization can make, change or remove an owner'))).toBe(true);
    expect(messages.some((m) => m.includes('this request needs an owner'))).toBe(true);
  });

  it('an owner hands over: another owner, then the first steps down to admin', async () => {
    const org = `/v1/organizations/${world.org.slug}`;
    const promoted = await call(h, 'PUT', `${org}/members/${members.admin.id}/role`, world.owner, { role: 'owner' });
    expect(promoted.status).toBe(200);
    expect(promoted.body.members).toContainEqual(expect.objectContaining({ user_id: members.admin.id, role: 'owner', admin: true }));
    const stepped = await call(h, 'PUT', `${org}/members/${world.owner.id}/role`, world.owner, { role: 'admin' });
    expect(stepped.status).toBe(200);
    expect(stepped.body.members).toContainEqual(expect.objectContaining({ user_id: world.owner.id, role: 'admin' }));
    // Back as they were, by the new owner.
    expect((await call(h, 'PUT', `${org}/members/${world.owner.id}/role`, members.admin, { role: 'owner' })).status).toBe(200);
    expect((await call(h, 'PUT', `${org}/members/${members.admin.id}/role`, world.owner, { role: 'admin' })).status).toBe(200);
  });

  it("a role granted from outside (an identity provider's group) raises a membership, never lowers it", async () => {
    const user = await h.user();
    const roleNow = async () =>
      await h.ctx.db
        .selectFrom('memberships')
        .select(['role', 'admin'])
        .where('organization_id', '=', world.org.id)
        .where('user_id', '=', user.id)
        .executeTakeFirstOrThrow();
    await grantRole(h.ctx.db, world.org.id, user.id, 'deployer');
    expect(await roleNow()).toEqual({ role: 'deployer', admin: false });
    await grantRole(h.ctx.db, world.org.id, user.id, 'viewer');
    expect(await roleNow()).toEqual({ role: 'deployer', admin: false });
    await grantRole(h.ctx.db, world.org.id, user.id, 'admin');
    expect(await roleNow()).toEqual({ role: 'admin', admin: true });
  });
});
