/**
 * The audit log over HTTP against real PostgreSQL: walks the live route table and, for every
 * route that changes something, makes a valid request as an administrator and checks that
 * exactly one audit row names its actor (and none when the request was refused); no audit
 * row holds a secret value used here; the listing routes filter, paginate and check access.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/app.js';
import { waitFor } from '../helpers/wait.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call, expectError, seedWorld, unique } from '../control-plane/fixtures.js';
import { ensureFixtureIssuer, fillPath, sampleBody, seedRouteWorld, type RouteWorld } from '../control-plane/route-fixtures.js';
import { signBody } from '../../src/modules/github/signature.js';
import { changingRequestsInFlight, RequestAudit, runWithAudit } from '../../src/platform/audit/request-audit.js';

/** Changing routes whose valid request changes nothing, so leaves no row (and why). */
const CHANGES_NOTHING: Record<string, string> = {
  'POST /v1/integrations/docker/auth': 'issues a short-lived registry token; nothing is stored',
  'POST /v1/organizations/:org_slug/github/installations/setup': 'answers a sealed install link; nothing is stored',
  'POST /v1/projects/:project_id/compose/plan': 'answers what an import would do; nothing is stored',
};

/** Changing routes this walk cannot make succeed in a bare world (and why): their refusal must leave no row. */
const NOT_EXERCISED: Record<string, string> = {
  'POST /v1/integrations/docker/auth': 'a registry token request (changes nothing)',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/cache/flush':
    'needs a running Redis add-on: test/ancla-contract/addons.test.ts flushes one',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/exec':
    'needs the SSH gateway (SSH_PORT): test/ssh/ssh-gateway.test.ts opens sessions through it',
  'DELETE /v1/users/me/ssh-keys/:key_id': "the world holds no SSH key of the caller's: test/ssh/ssh-gateway.test.ts removes one",
  'POST /v1/organizations/:org_slug/github/installations/setup': 'starts the App setup flow (changes nothing)',
  'POST /v1/applications/:application_id/rollback': 'needs an earlier deployment that served the environment',
  'POST /v1/applications/:application_id/runs': 'needs a serving release',
  'POST /v1/applications/:application_id/domains/:domain_id/verify': 'needs the DNS TXT record that proves the domain',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/promote': 'needs a deployed source environment',
  'POST /v1/workspaces/:workspace/projects/:project/promote': 'needs a deployed source environment',
  'POST /v1/applications/:application_id/config-release': 'needs a built image (test/pipeline-queue/)',
  'POST /v1/applications/:application_id/runs/attach': 'needs the local runtime (test/cli/first-hour.test.ts)',
  'POST /v1/workspaces/:workspace/projects/:project/pipeline/rollback': 'needs an earlier deployment that served the environment',
  'POST /v1/organizations/:org_slug/addons': "needs the local runtime's sandbox to start the server (test/addons/)",
  'PATCH /v1/organizations/:org_slug/addons/:addon': 'needs a running add-on server to restart (test/addons/)',
  'POST /v1/organizations/:org_slug/addons/:addon/undelete': 'needs a deleted add-on and a server to start (test/addons/)',
  'POST /v1/organizations/:org_slug/addons/:addon/rotate': 'needs a running add-on server (test/addons/)',
  'POST /v1/organizations/:org_slug/addons/:addon/query': 'needs a running add-on server (test/addons/)',
  'POST /v1/projects/:project_id/compose/apply': 'needs a registry or a local source to deploy from (test/compose/)',
  'POST /v1/projects/:project_id/compose/plan': 'a plan (changes nothing)',
  'POST /v1/applications/:application_id/instances/:instance/exec': 'needs a running instance (test/exec/)',
  'POST /v1/applications/:application_id/exec': 'needs a running instance (test/exec/)',
  'POST /v1/organizations/:org_slug/addons/:addon/backups': 'needs a running add-on server (test/addons/backups.test.ts)',
  'POST /v1/organizations/:org_slug/addons/:addon/restore': 'needs a backup of a running add-on (test/addons/backups.test.ts)',
  'POST /v1/organizations/:org_slug/addons/:addon/drills': 'needs a backup of a running add-on (test/addons/backups.test.ts)',
  'POST /v1/organizations/:org_slug/addons/:addon/swap': 'needs a restored add-on (test/addons/backups.test.ts)',
};

const SECRET = 'audit-walk-github-secret';

interface Prepared {
  url?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Who the row must name: the world's owner by API key unless said otherwise. */
  actor?: { userId: string | null; credential: string };
  raw?: string;
}

const fixtureIssuer = () => ensureFixtureIssuer(h);

/** What some routes need beyond the shared fixtures to succeed. */
const PREPARE: Record<string, (w: RouteWorld, url: string, other: TestUser) => Promise<Prepared>> = {
  'POST /v1/auth/login': async (w) => ({
    body: { email: w.owner.email, password: w.owner.password },
    headers: { 'x-api-key': '' },
    actor: { userId: w.owner.id, credential: 'password' },
  }),
  'POST /v1/auth/logout': async (w) => {
    const login = await call(h, 'POST', '/v1/auth/login', null, { email: w.owner.email, password: w.owner.password });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    secrets.push(cookie.split('=')[1]!);
    return { headers: { 'x-api-key': '', cookie }, actor: { userId: w.owner.id, credential: 'session' } };
  },
  // Approved by the browser session only; each code once.
  'POST /v1/auth/cli-logins': async (w) => {
    const login = await call(h, 'POST', '/v1/auth/login', null, { email: w.owner.email, password: w.owner.password });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    secrets.push(cookie.split('=')[1]!);
    return {
      headers: { 'x-api-key': '', cookie },
      body: { code: `AUDIT-${w.owner.id.slice(-8)}`, port: 40000 },
      actor: { userId: w.owner.id, credential: 'session' },
    };
  },
  // Sessions (issue 32): each ends one that a password login opened here.
  'DELETE /v1/users/me/sessions': async (w) => {
    await call(h, 'POST', '/v1/auth/login', null, { email: w.owner.email, password: w.owner.password });
    return {};
  },
  'DELETE /v1/users/me/sessions/:session_id': async (w) => {
    await call(h, 'POST', '/v1/auth/login', null, { email: w.owner.email, password: w.owner.password });
    const [session] = (await call(h, 'GET', '/v1/users/me/sessions', w.owner)).body;
    return { url: `/v1/users/me/sessions/${session.id}` };
  },
  'DELETE /v1/users/:user_id/sessions': async (_w, _url, other) => {
    await call(h, 'POST', '/v1/auth/login', null, { email: other.email, password: other.password });
    return { url: `/v1/users/${other.id}/sessions` };
  },
  'POST /v1/organizations/:org_slug/members': async (_w, _url, other) => ({ body: { username: other.username } }),
  // Single sign-on's routes act on the fixture's issuer (the site's, made here when an earlier route removed it).
  'DELETE /v1/sso/issuers/:issuer': async () => (await fixtureIssuer(), {}),
  'POST /v1/sso/issuers/:issuer/group-mappings': async () => (await fixtureIssuer(), {}),
  'DELETE /v1/sso/issuers/:issuer/group-mappings/:mapping_id': async (w, url) => {
    await fixtureIssuer();
    const mapped = await call(h, 'POST', '/v1/sso/issuers/fixture-issuer/group-mappings', w.owner, {
      group: `audit-${w.owner.id.slice(-6)}`,
      organization: w.org.slug,
      role: 'viewer',
    });
    return { url: url.replace(/[^/]+$/, mapped.body.id) };
  },
  // The world's add-on comes attached; these need it detached.
  'POST /v1/organizations/:org_slug/addons/:addon/attachments': async (w) => {
    await h.ctx.db.deleteFrom('addon_attachments').where('id', '=', w.addonAttachmentId!).execute();
    return {};
  },
  'DELETE /v1/organizations/:org_slug/addons/:addon': async (w) => {
    await h.ctx.db.deleteFrom('addon_attachments').where('id', '=', w.addonAttachmentId!).execute();
    return {};
  },
  'POST /v1/workspaces/:workspace/members': async (_w, _url, other) => ({ body: { username: other.username } }),
  'POST /v1/organizations/:org_slug/members/:user_id/toggle-admin': async (w, url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    return { url: url.replace(w.owner.id, other.id) };
  },
  'PUT /v1/organizations/:org_slug/members/:user_id/role': async (w, url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    return { url: url.replace(w.owner.id, other.id) };
  },
  'DELETE /v1/organizations/:org_slug/grants/:project_slug/:env/:user_id': async (w) => {
    const grant = { project: w.project.slug, environment: 'production', username: w.owner.username };
    expect([201, 409]).toContain((await call(h, 'POST', `/v1/organizations/${w.org.slug}/grants`, w.owner, grant)).status);
    return {};
  },
  // The holder of the link signs up: no one is signed in yet, so the row names no actor.
  'POST /v1/invitations/:token/sign-up': async () => ({ headers: { 'x-api-key': '' }, actor: { userId: null, credential: 'none' } }),
  'POST /v1/invitations/:token/accept': async (w, _url, other) => {
    const invited = await call(h, 'POST', `/v1/organizations/${w.org.slug}/invitations`, w.owner, { email: other.email, role: 'viewer' });
    expect(invited.status, invited.raw).toBe(201);
    return {
      url: `/v1/invitations/${String(invited.body.link).split('/').pop()}/accept`,
      headers: other.headers,
      actor: { userId: other.id, credential: 'api_key' },
    };
  },
  'DELETE /v1/organizations/:org_slug/members/:user_id': async (w, url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    return { url: url.replace(w.owner.id, other.id) };
  },
  'DELETE /v1/workspaces/:workspace/members/:user_id': async (w, url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    return { url: url.replace(w.owner.id, other.id) };
  },
  'POST /v1/workspaces/:workspace/teams/:team/members': async (w, _url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    return { body: { username: other.username } };
  },
  'DELETE /v1/workspaces/:workspace/teams/:team/members/:user_id': async (w, url, other) => {
    await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, w.owner, { username: other.username });
    const added = await call(h, 'POST', `/v1/workspaces/${w.org.slug}/teams/${w.teamSlug}/members`, w.owner, { username: other.username });
    expect(added.status, added.raw).toBeLessThan(300);
    return { url: url.replace(w.owner.id, other.id) };
  },
  'DELETE /v1/workspaces/:workspace/projects/:project/previews': async (w) => {
    const on = await call(h, 'PUT', `/v1/workspaces/${w.org.slug}/projects/${w.project.slug}/previews`, w.owner, {
      template_environment: 'production',
    });
    expect(on.status, on.raw).toBeLessThan(300);
    return {};
  },
  'DELETE /v1/workspaces/:workspace': async (w) => {
    const empty = await call(h, 'POST', '/v1/workspaces', w.owner, { name: unique('Empty') });
    expect(empty.status, empty.raw).toBe(201);
    return { url: `/v1/workspaces/${empty.body.slug}` };
  },
  'DELETE /v1/workspaces/:workspace/projects/:project': async (w) => {
    const empty = await call(h, 'POST', `/v1/workspaces/${w.org.slug}/projects`, w.owner, { name: unique('empty') });
    expect(empty.status, empty.raw).toBe(201);
    return { url: `/v1/workspaces/${w.org.slug}/projects/${empty.body.slug}` };
  },
  'DELETE /v1/workspaces/:workspace/projects/:project/envs/:env': async (w, url) => {
    const env = await call(h, 'POST', `/v1/workspaces/${w.org.slug}/projects/${w.project.slug}/envs`, w.owner, { name: 'staging' });
    expect(env.status, env.raw).toBeLessThan(300);
    return { url: url.replace('/envs/production', `/envs/${env.body.slug}`) };
  },
  'PUT /v1/applications/:application_id/guard': async () => ({ body: { max_error_ratio: 0.5 } }),
  'DELETE /v1/applications/:application_id/guard': async (w) => {
    const guard = await call(h, 'PUT', `/v1/applications/${w.app.id}/guard`, w.owner, { max_error_ratio: 0.5 });
    expect(guard.status, guard.raw).toBeLessThan(300);
    return {};
  },
  'POST /v1/images/:application_id/build': async (w) => {
    await h.ctx.db.updateTable('applications').set({ github_repository: 'acme/web' }).where('id', '=', w.app.id).execute();
    return {};
  },
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/builds/trigger': async (w) => {
    await h.ctx.db.updateTable('applications').set({ github_repository: 'acme/web' }).where('id', '=', w.app.id).execute();
    return {};
  },
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/builds': async (w) => {
    await h.ctx.db.updateTable('applications').set({ github_repository: 'acme/web' }).where('id', '=', w.app.id).execute();
    return {};
  },
  'POST /v1/applications/:application_id/deploy': async (w) => {
    await h.ctx.db.updateTable('applications').set({ github_repository: 'acme/web' }).where('id', '=', w.app.id).execute();
    return {};
  },
  'POST /v1/integrations/github/hooks': async () => {
    const raw = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
    return {
      raw,
      headers: {
        'x-api-key': '',
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-github-delivery': randomBytes(8).toString('hex'),
        'x-hub-signature-256': signBody(SECRET, Buffer.from(raw)),
      },
      actor: { userId: null, credential: 'signature' },
    };
  },
};

let h: Harness;
/** Every secret value this file sends or receives: none may appear in an audit row. */
const secrets: string[] = [];
const secretValue = () => {
  const value = `s3cret-${randomBytes(10).toString('hex')}`;
  secrets.push(value);
  return value;
};

/** The sample body with every `value`/`password` replaced by a fresh secret (config values are treated as secret). */
function withSecrets(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withSecrets);
  if (body && typeof body === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(body)) {
      if ((k === 'value' || k === 'password') && typeof v === 'string') out[k] = secretValue();
      else if (k === 'variables' && v && typeof v === 'object' && !Array.isArray(v))
        out[k] = Object.fromEntries(Object.keys(v).map((name) => [name, secretValue()]));
      else out[k] = withSecrets(v);
    }
    return out;
  }
  return body;
}

const countRows = async () => Number((await sql<{ n: number }>`select count(*)::int as n from audit_log`.execute(h.ctx.db)).rows[0]!.n);
const key = (r: RouteEntry) => `${r.method} ${r.url}`;

beforeAll(async () => {
  h = await createHarness(
    {
      WEBHOOK_ALLOW_PRIVATE: true,
      GITHUB_WEBHOOK_SECRET: SECRET,
      // The App's setup flow answers its install link (GitHub itself is never reached by the walk).
      GITHUB_APP_SLUG: 'slipway-audit',
      GITHUB_APP_CLIENT_ID: 'audit-client',
      GITHUB_APP_CLIENT_SECRET: 'audit-client-secret',
    },
    { jobs: true },
  );
});
afterAll(async () => {
  await h?.close();
});

describe('audit log', () => {
  it('every changing route of the live route table leaves exactly one audit row naming its actor', async () => {
    const routes = h.app.routeTable.filter((r) => r.url.startsWith('/v1/') && r.method !== 'GET' && !r.stream);
    expect(routes.length).toBeGreaterThan(30);
    const audited: string[] = [];
    const problems: string[] = [];
    const refused: string[] = [];
    for (const route of routes) {
      // A fresh world per route: deleting one thing must not starve the next route.
      const world: RouteWorld = await seedRouteWorld(h);
      const actor: TestUser = world.owner;
      secrets.push(world.secretVar.value, actor.apiKey, actor.password);
      await h.ctx.db.updateTable('users').set({ is_admin: true }).where('id', '=', actor.id).execute();
      // Verified credentials are cached a few seconds; the database announces the change at once.
      await waitFor('the actor to act as a site administrator', async () => {
        const res = await h.app.inject({ method: 'GET', url: '/v1/audit-log', headers: actor.headers });
        return res.statusCode === 200;
      });
      const other = await h.user();
      const prepared = (await PREPARE[key(route)]?.(world, fillPath(route, world), other)) ?? {};
      const body = 'body' in prepared ? prepared.body : withSecrets(sampleBody(route, world));
      const before = await countRows();
      const headers = { ...actor.headers, ...prepared.headers };
      if (headers['x-api-key'] === '') delete headers['x-api-key'];
      const response = await h.app.inject({
        method: route.method as 'POST',
        url: prepared.url ?? fillPath(route, world),
        headers,
        ...(prepared.raw !== undefined ? { payload: prepared.raw } : body === undefined ? {} : { payload: body as object }),
      });
      let parsed: any = null;
      try {
        parsed = response.json();
      } catch {
        parsed = null;
      }
      const res = { status: response.statusCode, body: parsed, headers: response.headers, raw: response.body };
      for (const value of [res.body?.secret, res.body?.key, res.body?.token]) if (typeof value === 'string') secrets.push(value);
      // A CLI login's key travels in its loopback callback URL.
      if (typeof res.body?.callback === 'string') secrets.push(new URL(res.body.callback).searchParams.get('api_key') ?? '');
      const cookie = res.headers['set-cookie'];
      if (cookie) secrets.push(String(cookie).split(';')[0]!.split('=')[1]!);
      // An API key's first use of the day is a sign-in row of its own (method USE), not the request's.
      const rows = (await h.ctx.db.selectFrom('audit_log').selectAll().where('id', '>', 0).orderBy('id').offset(before).execute()).filter(
        (r) => !r.action.startsWith('USE '),
      );
      if (res.status >= 400) {
        refused.push(`${key(route)} → ${res.status} ${res.raw.slice(0, 100)}`);
        // A refusal changes nothing; a 403 is recorded as a denied attempt (issue 27), once.
        const changes = rows.filter((r) => !r.denied);
        const denials = rows.filter((r) => r.denied);
        if (changes.length !== 0) problems.push(`${key(route)} was refused (${res.status}) yet left ${changes.length} audit rows`);
        if (denials.length !== (res.status === 403 ? 1 : 0))
          problems.push(`${key(route)} was refused (${res.status}) and left ${denials.length} denied rows`);
        continue;
      }
      if (CHANGES_NOTHING[key(route)] !== undefined) {
        if (rows.length !== 0) problems.push(`${key(route)} changes nothing yet left ${rows.length} audit rows`);
        continue;
      }
      if (rows.length !== 1) {
        problems.push(`${key(route)} → ${res.status}: ${rows.length} audit rows instead of 1`);
        continue;
      }
      const row = rows[0]!;
      const expected = prepared.actor ?? { userId: actor.id, credential: 'api_key' };
      if (row.actor_user_id !== expected.userId) problems.push(`${key(route)}: actor ${row.actor_user_id} instead of ${expected.userId}`);
      const credential = expected.credential;
      if (row.credential_kind !== credential) problems.push(`${key(route)}: credential ${row.credential_kind} instead of ${credential}`);
      if (row.action !== key(route)) problems.push(`${key(route)}: action ${row.action}`);
      if (row.client_address !== '127.0.0.1') problems.push(`${key(route)}: address ${row.client_address}`);
      audited.push(key(route));
    }
    console.log(`audit walk: ${audited.length} changing routes audited, ${refused.length} refused:\n${refused.join('\n')}`);
    expect(problems, problems.join('\n')).toEqual([]);
    // The walk exercised (almost) every changing route: refusals are listed above.
    const unexpected = refused.filter((r) => !Object.keys(NOT_EXERCISED).some((k) => r.startsWith(`${k} →`)));
    expect(unexpected, unexpected.join('\n')).toEqual([]);
    expect(audited.length).toBe(routes.length - Object.keys(NOT_EXERCISED).length);
  }, 300_000);

  it('no audit row holds a secret value', async () => {
    const text = (await sql<{ r: string }>`select to_jsonb(a)::text as r from audit_log a`.execute(h.ctx.db)).rows
      .map((x) => x.r)
      .join('\n');
    expect(text.length).toBeGreaterThan(0);
    const leaked = [...new Set(secrets)].filter((s) => s.length >= 8 && text.includes(s));
    expect(leaked).toEqual([]);
  });

  it("lists an organization's entries to its admins, filtered and paginated, and everything to site admins", async () => {
    const owner = await h.user();
    const w = await seedWorld(h, owner);
    const member = await h.user();
    expect((await call(h, 'POST', `/v1/organizations/${w.org.slug}/members`, owner, { username: member.username })).status).toBe(200);
    const renamed = await call(h, 'PATCH', `/v1/applications/${w.app.id}/settings`, member, { health_check_path: '/up' });
    expect(renamed.status, renamed.raw).toBe(200);

    const base = `/v1/organizations/${w.org.slug}/audit-log`;
    const all = await call(h, 'GET', base, owner);
    expect(all.status, all.raw).toBe(200);
    // seedWorld: organization, project, application, two variables; then the member and the settings.
    expect(all.body.items.map((e: { action: string }) => e.action)).toEqual([
      'PATCH /v1/applications/:application_id/settings',
      'POST /v1/organizations/:org_slug/members',
      'POST /v1/configurations/:application_id',
      'POST /v1/configurations/:application_id',
      'POST /v1/applications',
      'POST /v1/projects',
      'POST /v1/organizations',
    ]);
    expect(all.body.pagination).toEqual({ page: 1, per_page: 20, total: 7, pages: 1 });
    const first = all.body.items.at(-1);
    expect(first).toMatchObject({
      organization_id: w.org.id,
      actor: { user_id: owner.id, username: owner.username, credential_kind: 'api_key' },
      resource_type: 'organizations',
      resource_id: w.org.id,
      client_address: '127.0.0.1',
    });
    expect(all.body.items[0]).toMatchObject({
      actor: { user_id: member.id },
      resource_type: 'applications',
      resource_id: w.app.id,
      after: { health_check_path: '/up' },
    });
    expect(all.raw).not.toContain(w.secretVar.value);

    const byMember = await call(h, 'GET', `${base}?actor=${member.username}`, owner);
    expect(byMember.body.items.map((e: { actor: { user_id: string } }) => e.actor.user_id)).toEqual([member.id]);
    const byResource = await call(h, 'GET', `${base}?resource_type=projects&resource_id=${w.project.id}`, owner);
    expect(byResource.body.items.map((e: { action: string }) => e.action)).toEqual(['POST /v1/projects']);
    const page2 = await call(h, 'GET', `${base}?per_page=3&page=2`, owner);
    expect(page2.body.items.map((e: { id: number }) => e.id)).toEqual(all.body.items.slice(3, 6).map((e: { id: number }) => e.id));
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await call(h, 'GET', `${base}?since=${encodeURIComponent(future)}`, owner)).body.items).toEqual([]);
    expect((await call(h, 'GET', `${base}?until=${encodeURIComponent(future)}`, owner)).body.pagination.total).toBe(7);
    expectError(await call(h, 'GET', `${base}?since=yesterday`, owner), 422);

    // Members who are not admins, outsiders and non-site-admins are refused.
    expectError(await call(h, 'GET', base, member), 403);
    expectError(await call(h, 'GET', base, await h.user()), 403);
    expectError(await call(h, 'GET', '/v1/audit-log', owner), 403);
    const admin = await h.user({ admin: true });
    const site = await call(h, 'GET', `/v1/audit-log?actor=${owner.id}&per_page=100`, admin);
    expect(site.status).toBe(200);
    // Its changes, and the one refusal above (a 403 is audited, issue 27).
    // (An API key's first use of the day is a sign-in row of its own: `USE /v1/auth/api-keys/:id`.)
    expect(site.body.items.filter((e: { denied: boolean; action: string }) => !e.denied && !e.action.startsWith('USE ')).length).toBe(6);
    expect(site.body.items.filter((e: { denied: boolean }) => e.denied).map((e: { action: string }) => e.action)).toEqual([
      'GET /v1/audit-log',
    ]);
  });

  it('writes the row in the transaction of the change: a rolled-back or empty change leaves none', async () => {
    const owner = await h.user();
    const inRequest = <T>(fn: () => Promise<T>) => {
      const audit = new RequestAudit(
        {
          requestId: 'req-test',
          method: 'PATCH',
          route: '/v1/users/:user_id',
          params: { user_id: owner.id },
          clientAddress: '10.0.0.1',
          peerAddress: '10.0.0.1',
          body: {},
        },
        () => ({ userId: owner.id, username: owner.username, credentialKind: 'api_key', credentialId: null }),
      );
      audit.armed = true;
      return new Promise<{ audit: RequestAudit; result: T | Error }>((resolve) =>
        runWithAudit(
          audit,
          () =>
            void fn().then(
              (result) => {
                audit.close();
                resolve({ audit, result });
              },
              (err: Error) => {
                audit.close();
                resolve({ audit, result: err });
              },
            ),
        ),
      );
    };
    const rowsOf = () => h.ctx.db.selectFrom('audit_log').select('id').where('request_id', '=', 'req-test').execute();

    // A transaction that fails after its write takes the audit row with it.
    const failed = await inRequest(() =>
      h.ctx.db.transaction().execute(async (trx) => {
        await trx.updateTable('users').set({ username: 'renamed-then-rolled-back' }).where('id', '=', owner.id).execute();
        throw new Error('boom');
      }),
    );
    expect(failed.result).toBeInstanceOf(Error);
    expect(failed.audit.claimed).toBe(false);
    expect(await rowsOf()).toEqual([]);
    // A write that matches nothing changed nothing.
    await inRequest(() =>
      h.ctx.db.updateTable('users').set({ username: 'x' }).where('id', '=', '00000000-0000-0000-0000-000000000000').execute(),
    );
    expect(await rowsOf()).toEqual([]);
    // Two writes of one request: one row, committed with the first.
    const ok = await inRequest(async () => {
      await h.ctx.db
        .updateTable('users')
        .set({ email: `${owner.username}@renamed.example.com` })
        .where('id', '=', owner.id)
        .execute();
      await h.ctx.db.updateTable('users').set({ email: owner.email }).where('id', '=', owner.id).execute();
    });
    expect(ok.result).toBeUndefined();
    const rows = await rowsOf();
    expect(rows.map((r) => Number(r.id))).toEqual([ok.audit.rowId]);
  });

  it('changes made side by side with reads, in waves with idle time between, each leave their own row', async () => {
    // The request's audit storage is switched off whenever no change is in flight (issue 35): each wave
    // starts with it off, overlaps changes with reads, and must still give every change its own row.
    const owner = await h.user();
    const w = await seedWorld(h, owner);
    const detail = `/v1/applications/${w.org.slug}/${w.project.slug}/${w.app.slug}`;
    for (const wave of [1, 2, 3]) {
      const names = Array.from({ length: 8 }, (_, i) => `WAVE_${wave}_${i}`);
      const answers = await Promise.all([
        ...names.map((name) => call(h, 'POST', `/v1/configurations/${w.app.id}`, owner, { name, value: 'v' })),
        ...names.map(() => call(h, 'GET', detail, owner)),
      ]);
      expect(answers.map((a) => a.status)).toEqual([...names.map(() => 201), ...names.map(() => 200)]);
      const ids = answers.slice(0, names.length).map((a) => String(a.body.id));
      const rows = await h.ctx.db
        .selectFrom('audit_log')
        .select(['resource_id', 'actor_user_id', 'request_id'])
        .where('resource_id', 'in', ids)
        .execute();
      expect(rows.map((r) => r.resource_id).sort()).toEqual([...ids].sort());
      expect(new Set(rows.map((r) => r.request_id)).size).toBe(names.length);
      expect(rows.every((r) => r.actor_user_id === owner.id)).toBe(true);
      // Every change closed: the storage is off again until the next one.
      await waitFor('no changing request left open', async () => changingRequestsInFlight() === 0 || null, 5_000, 10);
    }
  });
});
