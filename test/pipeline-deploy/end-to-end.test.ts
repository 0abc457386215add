import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localRuntime } from '../helpers/local-runtime.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { loadDuring } from './fixtures.js';

/**
 * Issue 3's proof: a git repository with a small Python HTTP app and a Procfile, config
 * with one secret and one build-time variable, deployed by `POST /applications/{id}/deploy`
 * (build → release → deploy) and read through the router; then a code change is pushed
 * and deployed again while clients send requests through the router the whole time.
 */
const server = (version: string) =>
  pythonHttpApp(
    `f"${version} {os.environ['GREETING']} built={BUILT} token={hashlib.sha256(os.environ['API_TOKEN'].encode()).hexdigest()[:8]}"`,
    "BUILT = open('build-info.txt').read().strip()",
  );

const SECRET = 'sk-live-5f1d2e9a7b';
const tokenHash = async () => (await import('node:crypto')).createHash('sha256').update(SECRET).digest('hex').slice(0, 8);

let h: Harness;
let repo: TestRepo;
let t: TestApp;

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 5000 },
    { jobs: true, runtime: true },
  );
  repo = new TestRepo();
  repo.commit({
    'server.py': server('v1'),
    'slipway.json': JSON.stringify({ build: 'echo "label=$BUILD_LABEL" > build-info.txt' }),
    Procfile: 'web: python3 server.py\nrelease: echo "release of $GREETING with $API_TOKEN"\n',
  });
  t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/health', deployment_timeout: 60 });
  await setConfig(h, t, 'GREETING', 'hello');
  await setConfig(h, t, 'API_TOKEN', SECRET, { secret: true });
  await setConfig(h, t, 'BUILD_LABEL', 'blue', { buildtime: true });
});

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

async function chainDeploy() {
  const r = await h.app.inject({ method: 'POST', url: `/v1/applications/${t.appId}/deploy`, headers: t.user.headers });
  expect(r.statusCode).toBe(202);
  const { ok, image_id } = r.json();
  expect(ok).toBe(true);
  const image = await waitFor(
    'the build',
    async () => {
      const i = (await h.app.inject({ method: 'GET', url: `/v1/images/${image_id}/detail`, headers: t.user.headers })).json();
      return i.built || i.error ? i : null;
    },
    120_000,
  );
  expect(image.error_detail ?? null).toBeNull();
  const deployment = await waitFor(
    'the deployment',
    async () => {
      const list = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers })).json();
      // The chain's deployment is the one created after its image.
      const d = list.items.find((x: { created: string }) => Date.parse(x.created) >= Date.parse(image.created));
      if (!d) return null;
      const detail = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${d.id}/detail`, headers: t.user.headers })).json();
      return detail.complete || detail.error ? detail : null;
    },
    120_000,
  );
  return { image, deployment };
}

describe('source to running application (issue 3 proof)', () => {
  it('deploys from git, serves through the router, and redeploys a change with no failed request', async () => {
    const first = await chainDeploy();
    expect(first.deployment.error_detail).toBeNull();
    expect(first.deployment.complete).toBe(true);
    const url = new URL(first.deployment.deploy_metadata.url);
    const host = url.hostname;
    expect(host).toBe(`web.shop.${t.orgSlug}.localhost`);
    expect(Number(url.port)).toBe(localRuntime(h.ctx).router.port);
    const r = await routerGet(localRuntime(h.ctx).router.port, host);
    expect(r).toEqual({ status: 200, body: `v1 hello built=label=blue token=${await tokenHash()}` });
    expect(first.deployment.deploy_log).toContain('release | release of hello with **secret**');
    for (const text of [first.deployment.deploy_log, JSON.stringify(first.image), h.logs()]) expect(text).not.toContain(SECRET);

    // Change the code, push, deploy again under load.
    const sha = repo.commit({ 'server.py': server('v2') }, 'v2');
    const rollout = (async () => {
      await new Promise((res) => setTimeout(res, 300));
      const second = await chainDeploy();
      await new Promise((res) => setTimeout(res, 300));
      return second;
    })();
    const report = await loadDuring(localRuntime(h.ctx).router.port, host, rollout);
    const second = await rollout;
    console.log(
      `end-to-end redeploy under load: ${report.total} requests through the router, ${report.failed} failed`,
      report.failures.slice(0, 5),
    );
    expect(second.deployment.complete).toBe(true);
    expect(second.image.commit_sha).toBe(sha);
    expect(report.total).toBeGreaterThan(20);
    expect(report.failed).toBe(0);
    expect(report.bodies.map((b) => b.split(' ')[0])).toEqual(['v1', 'v2']);
    const list = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers })).json();
    expect(list.items.map((d: { release: { version: number } }) => d.release.version)).toEqual([2, 1]);
  });

  it('stops the chain at a failed build: no release, no deployment', async () => {
    const bad = new TestRepo();
    try {
      bad.commit({ 'server.py': server('x'), Procfile: 'web python3 server.py\n' });
      const other = await createApp(h, { github_repository: bad.dir, auto_deploy_branch: 'main' });
      const r = await h.app.inject({ method: 'POST', url: `/v1/applications/${other.appId}/deploy`, headers: other.user.headers });
      expect(r.statusCode).toBe(202);
      const image = await waitFor('the build', async () => {
        const i = (
          await h.app.inject({ method: 'GET', url: `/v1/images/${r.json().image_id}/detail`, headers: other.user.headers })
        ).json();
        return i.built || i.error ? i : null;
      });
      expect(image.error).toBe(true);
      expect(image.error_detail).toContain('Procfile line 1');
      // The chain job has finished (the queue is free) and created nothing more.
      await waitFor('the chain job to end', async () => {
        const runs = await h.ctx.db.selectFrom('job_runs').select('job_id').where('application_id', '=', other.appId).execute();
        return runs.length === 0;
      });
      const releases = (await h.app.inject({ method: 'GET', url: `/v1/releases/${other.appId}`, headers: other.user.headers })).json();
      expect(releases.items).toEqual([]);
      const deployments = (
        await h.app.inject({ method: 'GET', url: `/v1/applications/${other.appId}/deployments`, headers: other.user.headers })
      ).json();
      expect(deployments.items).toEqual([]);
      // Someone else's application: 403; no such application: 404.
      const stranger = await h.user();
      expect(
        (await h.app.inject({ method: 'POST', url: `/v1/applications/${other.appId}/deploy`, headers: stranger.headers })).statusCode,
      ).toBe(403);
      expect(
        (
          await h.app.inject({
            method: 'POST',
            url: '/v1/applications/00000000-0000-7000-8000-000000000000/deploy',
            headers: stranger.headers,
          })
        ).statusCode,
      ).toBe(404);
    } finally {
      bad.remove();
    }
  });
});
