/**
 * Issue 32's scoped keys, through the HTTP API of one real platform (jobs, local runtime):
 * a deploy token deploys its application through the real pipeline and is refused (403, with
 * the reason, audited) on every other route of the table; expiry, revocation, a user removed
 * from the organization; the `slipway keys` commands as a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RouteEntry } from '../../src/app.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { call } from '../control-plane/fixtures.js';
import { fillPath, sampleBody, seedRouteWorld, type RouteWorld } from '../control-plane/route-fixtures.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { slipway } from '../cli/slipway.js';

/** The routes a deploy token may use on its own application and environment: deploying and following what it started. */
const DEPLOY_TOKEN_ROUTES = new Set([
  'POST /v1/applications/:application_id/deploy',
  'POST /v1/applications/:application_id/rollback',
  'POST /v1/images/:application_id/build',
  'POST /v1/releases/:application_id/create',
  'POST /v1/releases/:release_id/deploy',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/deploy',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/promote',
  // Ancla's words for the same deploys (src/adapters/ancla).
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/deploy',
  'POST /v1/workspaces/:workspace/projects/:project/envs/:env/services/:service/builds/trigger',
  'POST /v1/workspaces/:workspace/projects/:project/pipeline/deploy',
  'POST /v1/workspaces/:workspace/projects/:project/pipeline/rollback',
  'GET /v1/applications/:org_slug/:project_slug/:app_slug',
  'GET /v1/applications/:application_id/deployments',
  'GET /v1/applications/:application_id/pipeline-status',
  'GET /v1/applications/:application_id/pipeline-metrics',
  'GET /v1/images/:application_id',
  'GET /v1/images/:image_id/detail',
  'GET /v1/images/:image_id/log',
  'GET /v1/images/:image_id/log/stream',
  'GET /v1/releases/:application_id',
  'GET /v1/releases/:release_id/detail',
  'GET /v1/releases/:release_id/log',
  'GET /v1/deployments/:deployment_id/detail',
  'GET /v1/deployments/:deployment_id/log',
  'GET /v1/deployments/:deployment_id/log/stream',
  'GET /v1/workspaces/:workspace/projects/:project/envs/:env/deploys',
  'GET /v1/workspaces/:workspace/projects/:project/envs/:env/deploys/:deploy_id',
  'GET /v1/workspaces/:workspace/projects/:project/envs/:env/deploys/:deploy_id/log',
  'GET /v1/workspaces/:workspace/projects/:project/envs/:env/deploys/:deploy_id/log/stream',
]);

let h: Harness;
let repo: TestRepo;
let t: TestApp;
let base: string;

const keyUser = (key: string): TestUser => ({ id: '', username: '', email: '', password: '', apiKey: key, headers: { 'x-api-key': key } });

async function createKey(owner: TestUser, body: Record<string, unknown>) {
  const res = await call(h, 'POST', '/v1/auth/api-keys', owner, body);
  expect(res.status, res.raw).toBe(201);
  return res.body as { id: string; key: string; kind: string; scope: Record<string, unknown> | null };
}

beforeAll(async () => {
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000 }, { jobs: true, runtime: true });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  repo = new TestRepo();
  repo.commit({
    'server.js': 'require("http").createServer((q, s) => s.end("ok")).listen(process.env.PORT);\n',
    Procfile: 'web: node server.js\n',
  });
  t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main' });
}, 120_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe('a deploy token', () => {
  let token: string;
  let projectSlug: string;
  let appSlug: string;
  let otherAppId: string;

  beforeAll(async () => {
    const app = (await call(h, 'GET', `/v1/applications/${t.appId}/deployments`, t.user)).status;
    expect(app).toBe(200);
    const project = await h.ctx.db.selectFrom('projects').select('slug').where('id', '=', t.projectId).executeTakeFirstOrThrow();
    const application = await h.ctx.db.selectFrom('applications').select('slug').where('id', '=', t.appId).executeTakeFirstOrThrow();
    projectSlug = project.slug;
    appSlug = application.slug;
    const other = await call(h, 'POST', '/v1/applications', t.user, { name: 'Other', project_id: t.projectId });
    otherAppId = other.body.id;
    const created = await createKey(t.user, {
      name: 'ci',
      kind: 'deploy_token',
      organization: t.orgSlug,
      project: projectSlug,
      application: appSlug,
      environment: 'production',
    });
    expect(created).toMatchObject({
      kind: 'deploy_token',
      scope: { application: appSlug, environment: 'production', actions: ['deploy'] },
    });
    token = created.key;
  });

  it('is shown once and stored only as a hash', async () => {
    const listed = await call(h, 'GET', '/v1/auth/api-keys', t.user);
    expect(listed.raw).not.toContain(token);
    const rows = await h.ctx.db.selectFrom('api_keys').selectAll().where('user_id', '=', t.user.id).execute();
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('deploys its application through the real pipeline, as `slipway deploy` does', async () => {
    const started = await call(
      h,
      'POST',
      `/v1/workspaces/${t.orgSlug}/projects/${projectSlug}/envs/production/deploy?service=${appSlug}`,
      keyUser(token),
    );
    expect(started.status, started.raw).toBe(202);
    const done = await waitFor(
      'the environment deploy',
      async () => {
        const r = await call(
          h,
          'GET',
          `/v1/workspaces/${t.orgSlug}/projects/${projectSlug}/envs/production/deploys/${started.body.id}`,
          keyUser(token),
        );
        expect(r.status, r.raw).toBe(200);
        return r.body.status === 'deploying' ? null : r.body;
      },
      { timeout: 120_000, every: 250 },
    );
    expect(done.status, JSON.stringify(done)).toBe('complete');
    const listed = await call(h, 'GET', '/v1/auth/api-keys', t.user);
    const mine = listed.body.find((k: { kind: string }) => k.kind === 'deploy_token');
    expect(mine.last_used).not.toBeNull();
    expect(mine.last_used_address).toBe('127.0.0.1');
  });

  it("is refused on the other application's deploy, on another environment, and when it tries to mint keys", async () => {
    const other = await call(h, 'POST', `/v1/applications/${otherAppId}/deploy`, keyUser(token));
    expect(other.status).toBe(403);
    expect(other.body.message).toMatch(/limited to application '.*'; this request acts on application 'other'/);
    await call(h, 'POST', `/v1/workspaces/${t.orgSlug}/projects/${projectSlug}/envs`, t.user, { name: 'staging' });
    const staging = await call(
      h,
      'POST',
      `/v1/workspaces/${t.orgSlug}/projects/${projectSlug}/envs/staging/deploy?service=${appSlug}`,
      keyUser(token),
    );
    expect(staging.status).toBe(403);
    expect(staging.body.message).toMatch(/limited to environment 'production'; this request acts on environment 'staging'/);
    const wholeEnvironment = await call(
      h,
      'POST',
      `/v1/workspaces/${t.orgSlug}/projects/${projectSlug}/envs/production/deploy`,
      keyUser(token),
    );
    expect(wholeEnvironment.status).toBe(403);
    const mint = await call(h, 'POST', '/v1/auth/api-keys', keyUser(token), { name: 'wider' });
    expect(mint.status).toBe(403);
    expect(mint.body.message).toMatch(/cannot manage keys/);
  });

  it('refusals are in the audit log with their reason', async () => {
    const rows = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('actor_user_id', '=', t.user.id)
      .where('denied', '=', true)
      .where('credential_kind', '=', 'api_key')
      .execute();
    expect(JSON.stringify(rows)).toContain('this request acts on application');
    expect(JSON.stringify(rows)).toContain('cannot manage keys');
  });
});

describe('a deploy token over the whole route table', () => {
  let world: RouteWorld;
  let token: string;
  let routes: RouteEntry[];

  beforeAll(async () => {
    world = await seedRouteWorld(h);
    token = (
      await createKey(world.owner, {
        name: 'ci',
        kind: 'deploy_token',
        organization: world.org.slug,
        project: world.project.slug,
        application: world.app.slug,
        environment: 'production',
      })
    ).key;
    routes = h.app.routeTable.filter((r) => !r.public && !r.stream);
  });

  it('answers 403 with a reason on every route but deploying and following its records', async () => {
    const failures: string[] = [];
    let refused = 0;
    for (const route of routes) {
      const key = `${route.method} ${route.url}`;
      if (DEPLOY_TOKEN_ROUTES.has(key)) continue;
      const res = await call(h, route.method, fillPath(route, world), keyUser(token), sampleBody(route, world));
      if (res.status !== 403 || typeof res.body?.message !== 'string' || !/API key/.test(res.body.message))
        failures.push(`${key} → ${res.status} ${res.raw.slice(0, 140)}`);
      else refused++;
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(refused).toBeGreaterThan(100);
  });

  it('reads the records of its own application', async () => {
    const failures: string[] = [];
    for (const route of routes.filter((r) => r.method === 'GET' && DEPLOY_TOKEN_ROUTES.has(`${r.method} ${r.url}`))) {
      const res = await call(h, 'GET', fillPath(route, world), keyUser(token));
      if (res.status !== 200) failures.push(`${route.method} ${route.url} → ${res.status} ${res.raw.slice(0, 140)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
  it('answers 403 on those routes for another application of the same project', async () => {
    const other = await call(h, 'POST', '/v1/applications', world.owner, { name: 'Sibling', project_id: world.project.id });
    expect(other.status).toBe(201);
    const failures: string[] = [];
    const onOther = routes.filter((r) => DEPLOY_TOKEN_ROUTES.has(`${r.method} ${r.url}`) && /:application_id|:app_slug/.test(r.url));
    for (const route of onOther) {
      const url = fillPath(route, world).replace(world.app.id, other.body.id).replace(`/${world.app.slug}`, `/${other.body.slug}`);
      const res = await call(h, route.method, url, keyUser(token), sampleBody(route, world));
      if (res.status !== 403 || !/limited to application/.test(res.body?.message))
        failures.push(`${route.method} ${url} → ${res.status} ${res.raw.slice(0, 140)}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
    expect(onOther.length).toBeGreaterThan(8);
  });
});

describe('limits that end', () => {
  it('an expired key stops working', async () => {
    const user = await h.user();
    const key = await createKey(user, { name: 'short', expires_at: new Date(Date.now() + 1500).toISOString() });
    expect((await call(h, 'GET', '/v1/organizations', keyUser(key.key))).status).toBe(200);
    await waitFor('the key to expire', async () => (await call(h, 'GET', '/v1/organizations', keyUser(key.key))).status === 401, 10_000);
    const past = await call(h, 'POST', '/v1/auth/api-keys', user, { name: 'past', expires_at: new Date(Date.now() - 1000).toISOString() });
    expect(past.status).toBe(422);
  });

  it('a revoked key stops working at once', async () => {
    const key = await createKey(t.user, { name: 'reader', organization: t.orgSlug, actions: ['read'] });
    expect((await call(h, 'GET', `/v1/organizations/${t.orgSlug}`, keyUser(key.key))).status).toBe(200);
    expect((await call(h, 'DELETE', `/v1/auth/api-keys/${key.id}`, t.user)).status).toBe(200);
    expect((await call(h, 'GET', `/v1/organizations/${t.orgSlug}`, keyUser(key.key))).status).toBe(401);
  });

  it("a user removed from the organization takes their keys' access with them", async () => {
    const member = await h.user();
    expect((await call(h, 'POST', `/v1/organizations/${t.orgSlug}/members`, t.user, { username: member.username })).status).toBeLessThan(
      300,
    );
    const key = await createKey(member, { name: 'member reader', organization: t.orgSlug, actions: ['read', 'deploy'] });
    expect((await call(h, 'GET', `/v1/applications/${t.appId}/deployments`, keyUser(key.key))).status).toBe(200);
    // Outside its actions: refused with the reason.
    const write = await call(h, 'POST', `/v1/configurations/${t.appId}`, keyUser(key.key), { name: 'X', value: 'y' });
    expect(write.status).toBe(403);
    expect(write.body.message).toMatch(/may 'read', 'deploy'; this request needs 'config:write'/);
    expect((await call(h, 'DELETE', `/v1/organizations/${t.orgSlug}/members/${member.id}`, t.user)).status).toBeLessThan(300);
    const after = await call(h, 'GET', `/v1/applications/${t.appId}/deployments`, keyUser(key.key));
    expect(after.status).toBe(403);
    expect(after.body.message).toMatch(/no longer a member/);
  });

  it('a key is only created inside what its user belongs to', async () => {
    const stranger = await h.user();
    const res = await call(h, 'POST', '/v1/auth/api-keys', stranger, { name: 'x', organization: t.orgSlug });
    expect(res.status).toBe(404);
    const token = await call(h, 'POST', '/v1/auth/api-keys', t.user, { name: 'x', kind: 'deploy_token', organization: t.orgSlug });
    expect(token.status).toBe(422);
  });
});

describe('slipway keys', () => {
  it('creates, lists and revokes a deploy token as a child process', async () => {
    const home = mkdtempSync(join(tmpdir(), 'slipway-keys-cli-'));
    const env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SLIPWAY_SERVER: base, SLIPWAY_API_KEY: t.user.apiKey };
    const project = await h.ctx.db.selectFrom('projects').select('slug').where('id', '=', t.projectId).executeTakeFirstOrThrow();
    const application = await h.ctx.db.selectFrom('applications').select('slug').where('id', '=', t.appId).executeTakeFirstOrThrow();
    const app = `${t.orgSlug}/${project.slug}/${application.slug}`;
    const created = await slipway(
      ['keys', 'create', '--app', app, '--env', 'production', '--actions', 'deploy', '--expires', '30d', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key).toMatchObject({
      kind: 'deploy_token',
      scope: { application: application.slug, environment: 'production', actions: ['deploy'] },
    });
    expect(Date.parse(key.expires) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const listed = await slipway(['keys', 'list'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(key.id);
    expect(listed.stdout).toContain(`${app} (production)`);
    expect(listed.stdout).not.toContain(key.key);
    const bad = await slipway(['keys', 'create', '--env', 'production'], env);
    expect(bad.code).toBe(2);
    const revoked = await slipway(['keys', 'revoke', key.id], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await call(h, 'GET', `/v1/applications/${t.appId}/deployments`, keyUser(key.key))).status).toBe(401);
  });
});
