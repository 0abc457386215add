/**
 * Walks every /v1 route of the route table: without credentials each non-public route
 * answers 401; for an authenticated member of ANOTHER organization it answers 403 on the
 * victim's resources (reads and writes alike) and changes nothing. As a control, the
 * victim's own GETs succeed, which proves the fixtures name real resources.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/app.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, snapshotTables } from './fixtures.js';
import { fillPath, MEMBER_WRITES_BESIDE_PROTECTED, sampleBody, seedRouteWorld, type RouteWorld } from './route-fixtures.js';

/**
 * Routes exempt from the 403 check, and why. Each acts only on the caller's own things,
 * so "a member of another organization" has nothing to be refused.
 */
const EXEMPT_FROM_403: Record<string, string> = {
  'POST /v1/auth/logout': "ends the caller's own session",
  'GET /v1/auth/api-keys': "lists the caller's own keys",
  'POST /v1/auth/api-keys': 'creates a key for the caller',
  'DELETE /v1/auth/api-keys/:id': "keys belong to users, not organizations: another user's key is 404",
  'GET /v1/users/me/ssh-keys': "lists the caller's own SSH keys",
  'POST /v1/users/me/ssh-keys': 'registers a key for the caller',
  'DELETE /v1/users/me/ssh-keys/:key_id': "SSH keys belong to users, not organizations: another user's key is 404",
  'GET /v1/users/me/sessions': "lists the caller's own sign-ins",
  'DELETE /v1/users/me/sessions': "ends the caller's own other sign-ins",
  'DELETE /v1/users/me/sessions/:session_id': "sessions belong to users, not organizations: another user's is 404",
  'GET /v1/organizations': "lists the caller's own organizations",
  'POST /v1/invitations/:token/accept':
    "the invitation's link names its organization: accepting checks the invited address, 403 for any other (test/roles/invitations.test.ts)",
  'POST /v1/organizations': 'creates a new organization (the caller becomes its admin)',
  'GET /v1/projects': "lists projects of the caller's own organizations",
  'GET /v1/overview': "lists applications of the caller's own organizations (?organization= of another is 403: test/overview)",
  'GET /v1/workspaces': "lists the caller's own workspaces",
  'POST /v1/workspaces': 'creates a new workspace',
  'GET /v1/integrations/doctor':
    "the server's own checks (sandbox, builds, edge): no organization's data; machine detail only for site administrators",
  'GET /v1/integrations/github/setup':
    "names its organization only inside the sealed state: another user's or organization's state is 403 (test/isolation/cross-org.test.ts)",
};

/** GET routes that read nothing (the owner's GETs prove the fixtures real), and why. */
const GET_NOT_A_READ: Record<string, string> = {
  'GET /v1/integrations/github/setup': "GitHub's redirect after installing the App: links an installation, needs GitHub's state and code",
  'GET /v1/exec-sessions/:session_id/stream': 'a WebSocket upgrade that starts a command: test/exec attaches it over a real connection',
};

let h: Harness;
let world: RouteWorld;
let outsider: TestUser;
let routes: RouteEntry[];

beforeAll(async () => {
  h = await createHarness();
  world = await seedRouteWorld(h);
  outsider = await h.user();
  // The outsider belongs to an organization of their own, just not to the victim's.
  await call(h, 'POST', '/v1/organizations', outsider, { name: 'Outsiders' });
  routes = h.app.routeTable.filter((r) => r.url.startsWith('/v1/'));
});
afterAll(async () => {
  await h?.close();
});

const key = (r: RouteEntry) => `${r.method} ${r.url}`;

describe('access matrix', () => {
  it('the route table holds the control plane routes', () => {
    const keys = routes.map(key);
    for (const expected of [
      'GET /v1/organizations/:org_slug',
      'POST /v1/configurations/:application_id/bulk',
      'POST /v1/applications/:application_id/scale',
    ]) {
      expect(keys).toContain(expected);
    }
  });

  it('every route names only parameters with fixtures', () => {
    const problems: string[] = [];
    for (const route of routes) {
      try {
        fillPath(route, world);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('every non-public route answers 401 without credentials, and with a bad key', async () => {
    const failures: string[] = [];
    for (const route of routes.filter((r) => !r.public)) {
      const url = fillPath(route, world);
      const attempts: Array<Record<string, string>> = [{}, { 'x-api-key': 'slw_not-a-key' }, { cookie: 'slipway_session=sess_forged' }];
      for (const headers of attempts) {
        const res = await call(h, route.method, url, null, sampleBody(route, world), headers);
        if (res.status !== 401 || res.body?.status !== 401 || typeof res.body?.message !== 'string') {
          failures.push(`${key(route)} with ${JSON.stringify(headers)} → ${res.status} ${res.raw.slice(0, 120)}`);
        }
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('every non-public route answers 403 to a member of another organization, and changes nothing', async () => {
    const before = await snapshotTables(h);
    const failures: string[] = [];
    for (const route of routes.filter((r) => !r.public && !EXEMPT_FROM_403[key(r)])) {
      const res = await call(h, route.method, fillPath(route, world), outsider, sampleBody(route, world));
      if (res.status === 422) {
        failures.push(
          `${key(route)} → 422 before the access check: add a valid body to SAMPLE_BODIES in test/control-plane/route-fixtures.ts (${res.body?.message})`,
        );
      } else if (res.status !== 403 || res.body?.status !== 403) {
        failures.push(`${key(route)} → ${res.status} ${res.raw.slice(0, 160)}`);
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(await snapshotTables(h)).toEqual(before);
  });

  it('the owner reads every GET route (the fixtures are real)', async () => {
    const failures: string[] = [];
    const siteAdmin = await h.user({ admin: true });
    // Event streams stay open (inject would wait forever): test/streams reads them over real connections.
    for (const route of routes.filter((r) => r.method === 'GET' && !r.public && !r.stream && !GET_NOT_A_READ[key(r)])) {
      const siteAdminOnly = [
        '/v1/users',
        '/v1/organizations/:org_slug/pipeline-limits',
        '/v1/audit-log',
        '/v1/sso/issuers',
        '/v1/sso/issuers/:issuer/group-mappings',
        '/v1/users/:user_id/sessions',
      ];
      const caller = siteAdminOnly.includes(route.url) ? siteAdmin : world.owner;
      const res = await call(h, 'GET', fillPath(route, world), caller);
      if (res.status >= 400) failures.push(`${key(route)} → ${res.status} ${res.raw.slice(0, 160)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('exemptions name routes that exist', () => {
    const keys = new Set(routes.map(key));
    const stale = Object.keys(EXEMPT_FROM_403).filter((k) => !keys.has(k));
    expect(stale, `remove from EXEMPT_FROM_403: ${stale.join(', ')}`).toEqual([]);
  });

  it('site-admin routes refuse members without the site admin flag', async () => {
    expect((await call(h, 'GET', '/v1/users', world.owner)).status).toBe(403);
    expect((await call(h, 'GET', `/v1/organizations/${world.org.slug}/pipeline-limits`, world.owner)).status).toBe(403);
    expect((await call(h, 'GET', '/v1/audit-log', world.owner)).status).toBe(403);
  });

  // Last: it protects the world's production and adds a plain member.
  it('with production protected, every write that reaches it answers 403 to a plain member and changes nothing', async () => {
    const member = await h.user();
    const owner = world.owner;
    expect(
      (await call(h, 'POST', `/v1/organizations/${world.org.slug}/members`, owner, { username: member.username })).status,
    ).toBeLessThan(300);
    // The member is on the team that owns the project, so the team's own rule does not hide the protected-environment one.
    if (world.teamSlug) {
      expect(
        (await call(h, 'POST', `/v1/workspaces/${world.org.slug}/teams/${world.teamSlug}/members`, owner, { username: member.username }))
          .status,
      ).toBe(200);
      expect(
        (await call(h, 'PATCH', `/v1/workspaces/${world.org.slug}/projects/${world.project.slug}`, owner, { team: world.teamSlug })).status,
      ).toBe(200);
    }
    const env = `/v1/workspaces/${world.org.slug}/projects/${world.project.slug}/envs/production`;
    expect((await call(h, 'PATCH', env, owner, { protected: true })).status).toBe(200);

    const writes = routes.filter((r) => r.method !== 'GET' && !r.public && !MEMBER_WRITES_BESIDE_PROTECTED[key(r)]);
    expect(writes.map(key)).toEqual(
      expect.arrayContaining([
        'POST /v1/applications/:application_id/scale',
        'PATCH /v1/applications/:application_id/settings',
        'POST /v1/configurations/:application_id',
        'POST /v1/workspaces/:workspace/config',
      ]),
    );
    const before = await snapshotTables(h);
    const failures: string[] = [];
    for (const route of writes) {
      const res = await call(h, route.method, fillPath(route, world), member, sampleBody(route, world));
      if (res.status !== 403 || res.body?.status !== 403) failures.push(`${key(route)} → ${res.status} ${res.raw.slice(0, 160)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(await snapshotTables(h)).toEqual(before);
    console.log(`protected matrix: ${writes.length} write routes refused to a plain member`);
  });

  it('routes allowed beside a protected environment exist', () => {
    const keys = new Set(routes.map(key));
    const stale = Object.keys(MEMBER_WRITES_BESIDE_PROTECTED).filter((k) => !keys.has(k));
    expect(stale, `remove from MEMBER_WRITES_BESIDE_PROTECTED: ${stale.join(', ')}`).toEqual([]);
  });
});
