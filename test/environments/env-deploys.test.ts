import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localRuntime } from '../helpers/local-runtime.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Environment deploys over the real pipeline: a local git repository with a tiny Python
 * HTTP service, built, released and deployed per environment, read through the router.
 */
const SERVER = pythonHttpApp(`f"{os.environ.get('SERVICE')} {os.environ.get('ENV_LABEL')} {os.environ.get('DB_PASSWORD') is not None}"`);
const SECRET = 'pg-pass-staging-7d1e0c';

let h: Harness;
let alice: TestUser; // workspace admin
let carol: TestUser; // plain member
let bob: TestUser; // another workspace
let repo: TestRepo;
const cleanup: TestRepo[] = [];
const P = '/workspaces/acme/projects/shop';
const ids: Record<string, string> = {};

const call = (user: TestUser, method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

const viaRouter = (host: string) => routerGet(localRuntime(h.ctx).router.port, host);

/** Polls an env deploy until it completes or fails. */
const settled = (env: string, deployId: string, timeoutMs = 120_000) =>
  waitFor(
    `env deploy ${deployId}`,
    async () => {
      const r = await call(alice, 'GET', `${P}/envs/${env}/deploys/${deployId}`);
      expect(r.statusCode).toBe(200);
      const d = r.json();
      return d.complete || d.error ? d : null;
    },
    timeoutMs,
    200,
  );

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 2000,
      PIPELINE_CONCURRENCY: 4,
      GITHUB_WEBHOOK_SECRET: 'hook-secret',
    },
    { jobs: true, runtime: true },
  );
  [alice, carol, bob] = [await h.user(), await h.user(), await h.user()];
  repo = new TestRepo('slipway-env-repo-');
  repo.commit({ 'server.py': SERVER, Procfile: 'web: python3 server.py\n' }, 'app');

  const ws = (await call(alice, 'POST', '/workspaces', { name: 'Acme' })).json();
  await call(bob, 'POST', '/workspaces', { name: 'Globex' });
  await call(alice, 'POST', '/workspaces/acme/members', { username: carol.username });
  const project = (await call(alice, 'POST', '/projects', { name: 'Shop', organization_id: ws.id })).json();
  for (const name of ['api', 'web']) {
    const app = (await call(alice, 'POST', '/applications', { name, project_id: project.id })).json();
    ids[name] = app.id;
    expect(
      (
        await call(alice, 'PATCH', `/applications/${app.id}/settings`, {
          github_repository: repo.dir,
          auto_deploy_branch: 'main',
          deployment_timeout: 60,
        })
      ).statusCode,
    ).toBe(200);
    await call(alice, 'POST', `/configurations/${app.id}`, { name: 'SERVICE', value: name });
  }
  expect((await call(alice, 'POST', `${P}/envs`, { name: 'staging', auto_deploy_branch: 'main' })).statusCode).toBe(201);
  await call(alice, 'POST', `${P}/envs/staging/config`, { name: 'ENV_LABEL', value: 'staging' });
  await call(alice, 'POST', `${P}/envs/staging/config`, { name: 'DB_PASSWORD', value: SECRET, secret: true });
  await call(alice, 'POST', `${P}/envs/production/config`, { name: 'ENV_LABEL', value: 'production' });
}, 120_000);

afterAll(async () => {
  await h?.close();
  for (const r of [repo, ...cleanup]) r?.remove();
});

describe('environment deploys', () => {
  let stagingDeploy: { id: string };

  it('deploys every service of an environment: 202 at once, complete when all are', async () => {
    const res = await call(carol, 'POST', `${P}/envs/staging/deploy`);
    expect(res.statusCode).toBe(202);
    const started = res.json();
    expect(started).toMatchObject({
      environment: 'staging',
      kind: 'deploy',
      from: null,
      complete: false,
      error: false,
      status: 'deploying',
    });
    expect(started.services.map((s: { service: string }) => s.service)).toEqual(['api', 'web']);
    stagingDeploy = started;

    const d = await settled('staging', started.id);
    expect(d).toMatchObject({ complete: true, error: false, error_detail: null, status: 'complete' });
    const stagingEnv = (await call(alice, 'GET', `${P}/envs/staging`)).json();
    for (const s of d.services) {
      expect(s).toMatchObject({ status: 'complete', deployment_id: expect.any(String), error_detail: null });
      const dep = await h.ctx.db.selectFrom('deployments').selectAll().where('id', '=', s.deployment_id).executeTakeFirstOrThrow();
      expect(dep).toMatchObject({ application_id: ids[s.service], environment_id: stagingEnv.id, status: 'complete' });
      const rel = await h.ctx.db.selectFrom('releases').selectAll().where('id', '=', dep.release_id).executeTakeFirstOrThrow();
      expect(rel.environment_id).toBe(stagingEnv.id);
      expect(JSON.stringify(rel.configuration)).not.toContain(SECRET);
    }
    // Each service runs in staging under its own name through the router.
    expect(await viaRouter('web.staging.shop.acme.localhost')).toEqual({ status: 200, body: 'web staging True' });
    expect(await viaRouter('api.staging.shop.acme.localhost')).toEqual({ status: 200, body: 'api staging True' });
    // Production was not deployed.
    expect((await viaRouter('web.shop.acme.localhost')).status).toBe(404);

    const log = await call(carol, 'GET', `${P}/envs/staging/deploys/${started.id}/log`);
    expect(log.statusCode).toBe(200);
    expect(log.json()).toMatchObject({ status: 'complete', error: false, error_detail: null });
    expect(log.json().log_text).toMatch(/^api \| /m);
    expect(log.json().log_text).toMatch(/^web \| .*Rollout/m);
    expect(log.body).not.toContain(SECRET);
    expect(h.logs()).not.toContain(SECRET);
  });

  it('scales a service in one environment only, reaching its running instances', async () => {
    const upstreams = (host: string) => localRuntime(h.ctx).router.table.upstreams(host).length;
    expect(upstreams('web.staging.shop.acme.localhost')).toBe(1);
    const res = await call(carol, 'PATCH', `${P}/envs/staging`, { process_counts: { web: { web: 2 } } });
    expect(res.json().process_counts.web).toEqual({ web: 2 });
    await waitFor('two staging web upstreams', () => upstreams('web.staging.shop.acme.localhost') === 2);
    expect(upstreams('web.staging.shop.acme.localhost')).toBe(2);
    expect(upstreams('api.staging.shop.acme.localhost')).toBe(1);
    expect((await call(carol, 'GET', `${P}/envs/production`)).json().process_counts.web).toEqual({});
    await call(carol, 'PATCH', `${P}/envs/staging`, { process_counts: { web: { web: null } } });
  });

  it('deploys one service with ?service=; running releases keep their frozen configuration', async () => {
    expect((await call(carol, 'POST', `${P}/envs/staging/config`, { name: 'ENV_LABEL', value: 'stage-2' })).statusCode).toBe(200);
    expect((await viaRouter('web.staging.shop.acme.localhost')).body).toBe('web staging True');
    const res = await call(carol, 'POST', `${P}/envs/staging/deploy?service=web`);
    expect(res.statusCode).toBe(202);
    expect(res.json().services.map((s: { service: string }) => s.service)).toEqual(['web']);
    const d = await settled('staging', res.json().id);
    expect(d.complete).toBe(true);
    expect((await viaRouter('web.staging.shop.acme.localhost')).body).toBe('web stage-2 True');
    expect((await viaRouter('api.staging.shop.acme.localhost')).body).toBe('api staging True');
    const list = await call(carol, 'GET', `${P}/envs/staging/deploys`);
    expect(list.json().map((x: { id: string }) => x.id)).toEqual([res.json().id, stagingDeploy.id]);
    expect((await call(carol, 'GET', `${P}/envs/staging/deploys?per_page=1&page=2`)).json().map((x: { id: string }) => x.id)).toEqual([
      stagingDeploy.id,
    ]);
    expect((await call(carol, 'POST', `${P}/envs/staging/deploy?service=nope`)).statusCode).toBe(404);
    expect((await call(carol, 'GET', `${P}/envs/production/deploys/${res.json().id}`)).statusCode).toBe(404);
  });

  it('promotes staging to a protected production: admins only, same image, no rebuild', async () => {
    expect((await call(alice, 'PATCH', `${P}/envs/production`, { protected: true })).statusCode).toBe(200);
    expect((await call(carol, 'POST', `${P}/envs/production/deploy`)).statusCode).toBe(403);
    expect((await call(carol, 'POST', `${P}/envs/production/promote`, { from: 'staging' })).statusCode).toBe(403);
    expect((await call(alice, 'POST', `${P}/envs/production/promote`, { from: 'production' })).statusCode).toBe(422);
    expect((await call(alice, 'POST', `${P}/envs/production/promote`, { from: 'nope' })).statusCode).toBe(404);

    const imagesBefore = await h.ctx.db.selectFrom('images').select(['id', 'application_id', 'image_id']).execute();
    const stagingEnv = (await call(alice, 'GET', `${P}/envs/staging`)).json();
    const res = await call(alice, 'POST', `${P}/envs/production/promote`, { from: 'staging', service: 'web' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ environment: 'production', kind: 'promote', from: 'staging' });
    const d = await settled('production', res.json().id);
    expect(d).toMatchObject({ complete: true, error: false });
    expect(d.services).toHaveLength(1);

    // No build ran: the production release points at the very image staging runs.
    expect(await h.ctx.db.selectFrom('images').select(['id', 'application_id', 'image_id']).execute()).toEqual(imagesBefore);
    const prodRelease = await h.ctx.db
      .selectFrom('releases')
      .selectAll()
      .where('id', '=', d.services[0].release_id)
      .executeTakeFirstOrThrow();
    const stagingCurrent = await h.ctx.db
      .selectFrom('deployments as dp')
      .innerJoin('releases as r', 'r.id', 'dp.release_id')
      .select(['r.id', 'r.image_ref', 'r.configuration'])
      .where('dp.application_id', '=', ids.web!)
      .where('dp.environment_id', '=', stagingEnv.id)
      .where('dp.status', '=', 'complete')
      .orderBy('dp.finished_at', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    expect(prodRelease.image_ref).toBe(stagingCurrent.image_ref);
    expect(prodRelease.configuration).toEqual(stagingCurrent.configuration);
    const detail = await call(alice, 'GET', `/releases/${prodRelease.id}/detail`);
    const stagingDetail = await call(alice, 'GET', `/releases/${stagingCurrent.id}/detail`);
    expect(detail.json().image.image_id).toMatch(/^sha256:/);
    expect(detail.json().image.image_id).toBe(stagingDetail.json().image.image_id);
    expect(detail.json().configuration_changes.added).toEqual(expect.arrayContaining(['DB_PASSWORD', 'ENV_LABEL', 'SERVICE']));
    expect(detail.body).not.toContain(SECRET);

    // Staging and production of one service run side by side under distinct names.
    expect(await viaRouter('web.shop.acme.localhost')).toEqual({ status: 200, body: 'web stage-2 True' });
    expect(await viaRouter('web.staging.shop.acme.localhost')).toEqual({ status: 200, body: 'web stage-2 True' });
    // The promotion's log says where the release came from.
    const log = await call(alice, 'GET', `${P}/envs/production/deploys/${res.json().id}/log`);
    expect(log.json().log_text).toContain('web | Promoted from staging release v');
  });

  it("promotes with the target environment's own configuration on request", async () => {
    const res = await call(alice, 'POST', `${P}/envs/production/promote`, { from: 'staging', service: 'api', configuration: 'target' });
    expect(res.statusCode).toBe(202);
    const d = await settled('production', res.json().id);
    expect(d.complete).toBe(true);
    const release = (await call(alice, 'GET', `/releases/${d.services[0].release_id}/detail`)).json();
    expect(release.release_metadata.promoted_from).toMatchObject({ environment: 'staging', configuration: 'target' });
    // Production's ENV_LABEL, and no staging-only DB_PASSWORD.
    expect(await viaRouter('api.shop.acme.localhost')).toEqual({ status: 200, body: 'api production False' });
    expect(await viaRouter('api.staging.shop.acme.localhost')).toEqual({ status: 200, body: 'api staging True' });
    expect((await call(alice, 'POST', `${P}/envs/production/promote`, { from: 'staging', configuration: 'mine' })).statusCode).toBe(422);
  });

  it('keeps non-admins out of a protected environment through the application-level deploy routes too', async () => {
    // Production is protected (above): redeploying one of its releases, or the application-level
    // build → release → deploy into it, is for workspace admins as well.
    const production = (await call(alice, 'GET', `${P}/envs/production`)).json();
    expect(production.protected).toBe(true);
    const prodRelease = await h.ctx.db
      .selectFrom('releases')
      .select('id')
      .where('application_id', '=', ids.web!)
      .where('environment_id', '=', production.id)
      .executeTakeFirstOrThrow();
    const count = async () =>
      Number(
        (
          await h.ctx.db
            .selectFrom('deployments')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const images = async () =>
      Number(
        (
          await h.ctx.db
            .selectFrom('images')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const [deploymentsBefore, imagesBefore] = [await count(), await images()];
    const redeploy = await call(carol, 'POST', `/releases/${prodRelease.id}/deploy`);
    expect(redeploy.statusCode).toBe(403);
    expect(redeploy.json().message).toBe("Environment 'production' is protected: only workspace admins deploy to it");
    expect((await call(carol, 'POST', `/applications/${ids.web}/deploy`)).statusCode).toBe(403);
    expect([await count(), await images()]).toEqual([deploymentsBefore, imagesBefore]);
    // Another workspace's user still learns nothing beyond the usual 403.
    expect((await call(bob, 'POST', `/releases/${prodRelease.id}/deploy`)).statusCode).toBe(403);

    // Nor can a member pick the branch whose pushes deploy there (the environment's, or for
    // production the application's own); other settings stay theirs to change.
    const branchRefused = await call(carol, 'PATCH', `${P}/envs/production`, { auto_deploy_branch: 'carols-branch' });
    expect(branchRefused.statusCode).toBe(403);
    expect(branchRefused.json().message).toBe(
      "Environment 'production' is protected: only workspace admins choose the branch that deploys to it",
    );
    expect((await call(carol, 'PATCH', `/applications/${ids.web}/settings`, { auto_deploy_branch: 'carols-branch' })).statusCode).toBe(403);
    // Issue 20: every other setting that changes is the admins' too; a value sent unchanged is not a change.
    expect((await call(carol, 'PATCH', `/applications/${ids.web}/settings`, { deployment_timeout: 61 })).statusCode).toBe(403);
    const unchanged = await call(carol, 'PATCH', `/applications/${ids.web}/settings`, { auto_deploy_branch: 'main' });
    expect(unchanged.statusCode).toBe(200);
    expect(unchanged.json().auto_deploy_branch).toBe('main');
    expect((await call(alice, 'PATCH', `/applications/${ids.web}/settings`, { deployment_timeout: 60 })).statusCode).toBe(200);
    expect((await call(carol, 'PATCH', `${P}/envs/production`, { name: 'Production' })).statusCode).toBe(200);
    expect((await call(alice, 'PATCH', `${P}/envs/production`, { auto_deploy_branch: 'release' })).json().auto_deploy_branch).toBe(
      'release',
    );
    expect((await call(alice, 'PATCH', `${P}/envs/production`, { auto_deploy_branch: null })).statusCode).toBe(200);
  });

  it("deploys an environment's services on a push to its auto_deploy_branch", async () => {
    expect((await call(carol, 'PATCH', `${P}/envs/staging`, { auto_deploy_branch: 'develop' })).statusCode).toBe(200);
    repo.git('checkout', '-q', '-b', 'develop');
    const sha = repo.commit({ NOTES: 'develop\n' }, 'develop');
    repo.git('checkout', '-q', 'main');
    const body = JSON.stringify({ ref: 'refs/heads/develop', after: sha, repository: { full_name: 'acme/shop', clone_url: repo.dir } });
    const signature = `sha256=${createHmac('sha256', 'hook-secret').update(body).digest('hex')}`;
    const hook = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: body,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': 'd-1',
        'x-hub-signature-256': signature,
      },
    });
    expect(hook.statusCode).toBe(200);
    const stagingEnv = (await call(alice, 'GET', `${P}/envs/staging`)).json();
    const row = await h.ctx.db
      .selectFrom('github_hooks')
      .select('triggered')
      .where('id', '=', hook.json().hook_id)
      .executeTakeFirstOrThrow();
    const triggered = row.triggered as unknown as Array<{ application_id: string; environment_id?: string }>;
    expect(triggered.map((t) => [t.application_id, t.environment_id]).sort()).toEqual(
      [
        [ids.api, stagingEnv.id],
        [ids.web, stagingEnv.id],
      ].sort(),
    );
    const done = await waitFor(
      'both staging deployments of the push',
      async () => {
        const rows = await h.ctx.db
          .selectFrom('deployments as d')
          .innerJoin('releases as r', 'r.id', 'd.release_id')
          .select('d.id')
          .where('d.environment_id', '=', stagingEnv.id)
          .where('r.commit_sha', '=', sha)
          .where('d.status', '=', 'complete')
          .execute();
        return rows.length >= 2 && rows;
      },
      120_000,
      200,
    );
    expect(done).toHaveLength(2);
  });

  it('marks the env deploy failed when a service fails, naming it', async () => {
    const broken = (
      await call(alice, 'POST', '/applications', { name: 'broken', project_id: (await call(alice, 'GET', P)).json().id })
    ).json();
    // Its repository's build command fails (the others still deploy).
    const brokenRepo = new TestRepo('slipway-env-broken-', 'develop');
    cleanup.push(brokenRepo);
    brokenRepo.commit(
      { 'slipway.json': JSON.stringify({ build: 'echo compiling; exit 3' }), Procfile: 'web: python3 -m http.server $PORT\n' },
      'broken',
    );
    expect((await call(alice, 'PATCH', `/applications/${broken.id}/settings`, { github_repository: brokenRepo.dir })).statusCode).toBe(200);
    const res = await call(carol, 'POST', `${P}/envs/staging/deploy`);
    expect(res.statusCode).toBe(202);
    const d = await settled('staging', res.json().id);
    expect(d).toMatchObject({ complete: false, error: true, status: 'error' });
    expect(d.error_detail).toContain("service 'broken' failed: build v1 failed");
    expect(d.services.find((s: { service: string }) => s.service === 'broken')).toMatchObject({ status: 'error', deployment_id: null });
    const log = await call(carol, 'GET', `${P}/envs/staging/deploys/${res.json().id}/log`);
    expect(log.json()).toMatchObject({ status: 'error', error: true });
    expect(log.json().log_text).toMatch(/^broken \| compiling/m);

    // A service whose run cannot even start (nothing to build from) fails the record at once.
    await call(alice, 'POST', '/applications', { name: 'norepo', project_id: (await call(alice, 'GET', P)).json().id });
    const now = await call(carol, 'POST', `${P}/envs/staging/deploy?service=norepo`);
    expect(now.statusCode).toBe(202);
    expect(now.json()).toMatchObject({
      status: 'error',
      error: true,
      services: [{ service: 'norepo', status: 'error', deployment_id: null }],
    });
    expect(now.json().error_detail).toMatch(/^service 'norepo' failed: .*github_repository/);
    // The failure is reported at once; the other services' runs go on and their progress stays visible.
    const end = Date.now() + 120_000;
    let services: Array<{ service: string; status: string }> = d.services;
    while (services.some((s) => s.service !== 'broken' && s.status !== 'complete' && s.status !== 'error') && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      services = (await call(carol, 'GET', `${P}/envs/staging/deploys/${res.json().id}`)).json().services;
    }
    expect(services.filter((s) => s.status === 'complete').map((s) => s.service)).toEqual(['api', 'web']);
    expect((await call(carol, 'GET', `${P}/envs/staging/deploys/${res.json().id}`)).json()).toMatchObject({ status: 'error', error: true });
  });

  it('refuses another workspace with 403', async () => {
    for (const [method, url, payload] of [
      ['POST', `${P}/envs/staging/deploy`],
      ['POST', `${P}/envs/staging/promote`, { from: 'production' }],
      ['GET', `${P}/envs/staging/deploys`],
      ['GET', `${P}/envs/staging/deploys/${stagingDeploy.id}`],
      ['GET', `${P}/envs/staging/deploys/${stagingDeploy.id}/log`],
    ] as const) {
      expect((await call(bob, method, url, payload)).statusCode, `${method} ${url}`).toBe(403);
    }
  });
});
