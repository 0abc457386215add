/**
 * Ancla's pipeline status (calls/pipeline.ts) over the real pipeline: a tiny Python service
 * built, released and deployed twice, followed as `ancla deploy` follows it (poll until the
 * build reads `success`, then until the deploy does). The deploy must not read `success` from
 * the previous deployment while the new build is still on its way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { waitFor } from '../helpers/wait.js';
import { calls } from './calls/pipeline.js';
import { pathOf, sendCall } from './decoded-fields.js';

let h: Harness;
let base: string;
let alice: TestUser;
let bob: TestUser; // another workspace
let repo: TestRepo;
let appId: string;
const [status] = calls as [(typeof calls)[number]];
const vars = { ws: 'acme', project: 'shop', svc: 'web', env: 'production' };

const v1 = async (user: TestUser, method: string, url: string, payload?: unknown) => {
  const response = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
};

type Stage = { status: string; error_detail: string | null } | null;
const pipelineStatus = async () => (await sendCall(base, alice.apiKey, status, vars)).body as { build: Stage; deploy: Stage };

/** Deploys the service and follows it as Ancla's CLI does; answers the statuses it saw, in order. */
async function deployAndFollow() {
  const requested = Date.now();
  await v1(alice, 'POST', `/applications/${appId}/deploy`);
  const seen: string[] = [];
  let buildDone = false;
  await waitFor(
    'the pipeline to read success',
    async () => {
      const { build, deploy } = await pipelineStatus();
      if (!buildDone && build) {
        if (seen.at(-1) !== `build ${build.status}`) seen.push(`build ${build.status}`);
        if (build.status === 'error') throw new Error(`build failed: ${build.error_detail}`);
        buildDone = build.status === 'success' && seen.includes('build building');
      }
      if (!buildDone || !deploy) return false;
      if (seen.at(-1) !== `deploy ${deploy.status}`) seen.push(`deploy ${deploy.status}`);
      if (deploy.status === 'error') throw new Error(`deploy failed: ${deploy.error_detail}`);
      return deploy.status === 'success';
    },
    { timeout: 120_000, every: 50 },
  );
  // What the CLI was told is done is this request's deployment, complete.
  const newest = (await v1(alice, 'GET', `/applications/${appId}/deployments`)).items[0];
  expect(Date.parse(newest.created)).toBeGreaterThanOrEqual(requested - 1000);
  expect(newest.status).toBe('complete');
  return seen;
}

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as { port: number }).port}`;
  [alice, bob] = [await h.user(), await h.user()];
  repo = new TestRepo('slipway-ancla-pipeline-');
  repo.commit({ 'server.py': pythonHttpApp('"hello"'), Procfile: 'web: python3 server.py\n' }, 'app');
  await v1(alice, 'POST', '/workspaces', { name: 'Acme' });
  await v1(bob, 'POST', '/workspaces', { name: 'Globex' });
  const project = await v1(alice, 'POST', '/workspaces/acme/projects', { name: 'Shop' });
  appId = (await v1(alice, 'POST', '/applications', { name: 'web', project_id: project.id })).id;
  await v1(alice, 'PATCH', `/applications/${appId}/settings`, {
    github_repository: repo.dir,
    auto_deploy_branch: 'main',
    deployment_timeout: 60,
  });
  await v1(alice, 'POST', `/configurations/${appId}`, { name: 'GREETING', value: 'hello' });
  await v1(alice, 'POST', '/workspaces/acme/projects/shop/envs', { name: 'staging' });
}, 120_000);
afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe('Ancla clients: pipeline', () => {
  it('pipeline status', async () => {
    expect(await pipelineStatus()).toEqual({ build: null, deploy: null });

    const first = await deployAndFollow();
    expect(first.slice(0, 2)).toEqual(['build building', 'build success']);
    // A second deploy: the previous deployment's success is never reported for the new build.
    const second = await deployAndFollow();
    expect(second.slice(0, 2)).toEqual(['build building', 'build success']);
    expect(second.at(-1)).toBe('deploy success');
    for (const word of second.slice(2, -1)) expect(['deploy pending', 'deploy in_progress']).toContain(word);
    expect(await pipelineStatus()).toEqual({
      build: { status: 'success', error_detail: null },
      deploy: { status: 'success', error_detail: null },
    });

    // Slugs are checked inside the caller's workspace: an unknown service or environment is 404, another workspace 403.
    const get = (user: TestUser, over: Record<string, string>) =>
      fetch(`${base}${pathOf(status, { ...vars, ...over })}`, { headers: { 'X-API-Key': user.apiKey } }).then((r) => r.status);
    expect(await get(alice, { svc: 'nope' })).toBe(404);
    expect(await get(alice, { env: 'nope' })).toBe(404);
    expect(await get(bob, {})).toBe(403);
  }, 240_000);

  it('project pipeline: history, metrics, rollback, promote and its preview, deploy, observability', async () => {
    // Not called by the clients (no call list): Ancla's OpenAPI operations over Slipway's records.
    const P = `${base}/api/v1/workspaces/acme/projects/shop`;
    const send = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${P}${path}`, {
        method,
        headers: { 'X-API-Key': alice.apiKey, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    const deployed = (env: string) =>
      waitFor(
        `web deployed in ${env}`,
        async () => {
          const { body } = await send('GET', `/pipeline/status?service=web&env=${env}`);
          if (body.deploy?.status === 'error') throw new Error(body.deploy.error_detail);
          return body.deploy?.status === 'success';
        },
        { timeout: 120_000, every: 100 },
      );

    const history = await send('GET', '/pipeline/history/?service=web&env=production');
    expect(history.status).toBe(200);
    expect(history.body.map((d: { status: string; version: number; rollback: boolean }) => [d.status, d.version, d.rollback])).toEqual([
      ['success', 2, false],
      ['success', 1, false],
    ]);
    const metrics = await send('GET', '/pipeline/metrics?service=web&env=production');
    expect(metrics.body).toMatchObject({
      build: { total: 2, success: 2 },
      release: { total: 2, success: 2 },
      deploy: { total: 2, success: 2 },
    });

    const rollback = await send('POST', '/pipeline/rollback?service=web&env=production');
    expect(rollback.status).toBe(202);
    expect(rollback.body).toMatchObject({ version: 1, rollback: true });
    await deployed('production');
    expect((await send('GET', '/pipeline/history?service=web&env=production&limit=1')).body).toEqual([
      expect.objectContaining({ id: rollback.body.id, status: 'success', version: 1, rollback: true }),
    ]);

    const before = await send('GET', '/promote/preview?service=web&source_env=production&target_env=staging');
    expect(before.body).toMatchObject({
      source: { version: 1, build_version: 1 },
      target: null,
      can_promote: true,
      same_build: false,
      configuration: { added: ['GREETING'], removed: [], changed: [] },
    });
    const promotion = await send('POST', '/promote/', { source_env: 'production', target_env: 'staging', service: 'web' });
    expect(promotion.status, JSON.stringify(promotion.body)).toBe(201);
    expect(promotion.body).toMatchObject({ environment: 'staging', from: 'production', services: [{ service: 'web' }] });
    await deployed('staging');
    const after = await send('GET', '/promote/preview?service=web&source_env=production&target_env=staging');
    expect(after.body).toMatchObject({ same_build: true, configuration: { added: [], removed: [], changed: [] } });

    const deploy = await send('POST', '/pipeline/deploy?service=web&env=staging');
    expect(deploy.status).toBe(202);
    expect(deploy.body).toMatchObject({ environment: 'staging', from: null, services: [{ service: 'web', build_id: expect.any(String) }] });
    await waitFor(
      'the staging deploy to finish',
      async () => {
        const { body } = await send('GET', '/pipeline/history?service=web&env=staging&limit=1');
        if (body[0]?.status === 'error') throw new Error(body[0].error_detail);
        return body.length === 1 && body[0].version > 3 && body[0].status === 'success';
      },
      { timeout: 120_000, every: 100 },
    );

    const observed = await send('GET', '/observability?env=production&range=1h');
    expect(observed.status).toBe(200);
    expect(observed.body).toMatchObject({
      range: '1h',
      environment: 'production',
      services: [{ service: 'web', history: expect.any(Array), requests: expect.any(Array) }],
    });
    expect((await send('GET', '/observability?env=nope')).status).toBe(404);
    expect((await send('GET', '/pipeline/history?service=nope&env=production')).status).toBe(404);
  }, 240_000);
});
