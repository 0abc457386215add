import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricsSampler } from '../../src/modules/observability/metrics-sampler.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, loadDuring, NODE_APP, settled } from './fixtures.js';

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 50,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 5000,
      PIPELINE_CONCURRENCY: 4,
      OBSERVABILITY_SAMPLE_SECONDS: 1,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
});

const deploy = async (releaseId: string) => {
  const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
  expect(r.statusCode).toBe(202);
  return r.json().deployment_id as string;
};
const hostOf = (d: { slugs: { org: string; project: string; app: string } }) =>
  `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;
const routerPort = () => localRuntime(h.ctx).router.port;

describe('deployments', () => {
  it('deploys a release, runs release and postdeploy with secrets scrubbed, and serves it through the router', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const rel = await app.release(
      { 'app.js': NODE_APP('v1') },
      'web: node app.js\nrelease: echo migrating with $API_TOKEN\npostdeploy: echo done $GREETING\n',
    );
    const id = await deploy(rel);
    const d = await settled(h, alice, id);
    expect(d).toMatchObject({ complete: true, error: false, status: 'complete', release: { id: rel, version: 1 } });
    expect(d.deploy_metadata.url).toBe(`http://${hostOf(app)}:${routerPort()}`);
    expect(d.deploy_step).toEqual({ steps: ['Setup', 'Release', 'Deploy', 'Rollout', 'Done'], current: 4 });
    expect(d.deploy_log).toContain('release | migrating with **secret**');
    expect(d.deploy_log).toContain('postdeploy | done hello');
    expect(d.deploy_log).not.toContain('tok-very-secret-123');
    const r = await routerGet(routerPort(), hostOf(app));
    expect(r).toEqual({ status: 200, body: 'v1:hello' });

    const log = await h.app.inject({ method: 'GET', url: `/v1/deployments/${id}/log`, headers: alice.headers });
    expect(log.json()).toMatchObject({ status: 'complete', error: false, error_detail: null });
    const list = await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/deployments`, headers: alice.headers });
    expect(list.json().pagination).toEqual({ page: 1, per_page: 20, total: 1, pages: 1 });
    expect(list.json().items[0].id).toBe(id);
    const rows = await h.ctx.db.selectFrom('instances').selectAll().where('application_id', '=', app.appId).execute();
    expect(rows.map((i) => [i.process_type, i.state])).toEqual([['web', 'healthy']]);

    // Another user cannot see it; an unknown id is 404.
    const bob = await h.user();
    expect((await h.app.inject({ method: 'GET', url: `/v1/deployments/${id}/detail`, headers: bob.headers })).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'GET', url: '/v1/deployments/not-a-uuid/detail', headers: alice.headers })).statusCode).toBe(404);
    expect((await routerGet(routerPort(), 'nothing.here.localhost')).status).toBe(404);
  });

  it('redeploys with no failed request while a client sends requests through the router', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(v1))).complete).toBe(true);
    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { web: 2 } },
    });
    await waitFor('two web instances', async () => localRuntime(h.ctx).router.table.upstreams(hostOf(app)).length === 2);
    const v2 = await app.release({ 'app.js': NODE_APP('v2') }, 'web: node app.js\n');
    const rollout = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      const d = await settled(h, alice, await deploy(v2));
      await new Promise((r) => setTimeout(r, 300));
      return d;
    })();
    const report = await loadDuring(routerPort(), hostOf(app), rollout);
    const d = await rollout;
    console.log(`redeploy under load: ${report.total} requests, ${report.failed} failed`, report.failures.slice(0, 5));
    expect(d.complete).toBe(true);
    expect(report.total).toBeGreaterThan(50);
    expect(report.failed).toBe(0);
    expect(report.bodies).toEqual(['v1:hello', 'v2:hello']);
  });

  it('fails on a failing release command and keeps the previous release serving', async () => {
    const app = await deployableApp(h, alice);
    const good = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(good))).complete).toBe(true);
    const bad = await app.release({ 'app.js': NODE_APP('v2') }, 'web: node app.js\nrelease: echo token $API_TOKEN; exit 7\n');
    const d = await settled(h, alice, await deploy(bad));
    expect(d).toMatchObject({ complete: false, error: true, status: 'error' });
    expect(d.error_detail).toBe('The release command failed (exit code 7)');
    expect(d.error_code).toBe('release_command_failed');
    expect(d.deploy_log).toContain('release | token **secret**');
    expect(d.deploy_step.current).toBe(1);
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
  });

  it('fails on a failing postdeploy command and switches back to the previous release', async () => {
    const app = await deployableApp(h, alice);
    const good = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const first = await settled(h, alice, await deploy(good));
    expect(first.complete).toBe(true);
    const bad = await app.release({ 'app.js': NODE_APP('v2') }, 'web: node app.js\npostdeploy: echo warming with $API_TOKEN; exit 3\n');
    const d = await settled(h, alice, await deploy(bad));
    expect(d).toMatchObject({ complete: false, error: true, status: 'error' });
    expect(d.error_detail).toBe('The postdeploy command failed (exit code 3)');
    expect(d.deploy_log).toContain('postdeploy | warming with **secret**');
    expect(d.deploy_step.current).toBe(4);
    // The failed deployment served for a moment; the serving record is still the first one, and so is the router.
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
    const rows = await h.ctx.db
      .selectFrom('instances')
      .select(['release_id', 'deployment_id'])
      .where('application_id', '=', app.appId)
      .execute();
    expect(rows).toEqual([{ release_id: good, deployment_id: first.id }]);
  });

  it('fails an app that never becomes healthy at the timeout; the previous release keeps serving', async () => {
    const app = await deployableApp(h, alice, { deployment_timeout: 5, health_check_path: '/health' });
    const good = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(good))).complete).toBe(true);
    // Listens on the wrong port: never answers its health check.
    const never = await app.release({ 'app.js': NODE_APP('v2').replace('Number(process.env.PORT)', '0') }, 'web: node app.js\n');
    const started = Date.now();
    const d = await settled(h, alice, await deploy(never));
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    expect(d.error).toBe(true);
    // What the check got, on which port, and where the app listens instead (issue 30).
    expect(d.error_detail).toMatch(
      /^Deployment timed out after 5s: web\.1 did not answer 2xx on \/health at port (\d+) within 5s \(last: .+\); it listens on port (\d+) instead\. Hint: it listens on port \2, not on \1 \(the PORT variable\)/,
    );
    expect(d.error_code).toBe('health_check_failed');
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
    const rows = await h.ctx.db.selectFrom('instances').select(['release_id']).where('application_id', '=', app.appId).execute();
    expect(rows).toEqual([{ release_id: good }]);
  });

  it('restarts a crashing instance and counts restarts; a crash loop fails the deploy with the exit code', async () => {
    const app = await deployableApp(h, alice, { deployment_timeout: 5 });
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(rel))).complete).toBe(true);
    await routerGet(routerPort(), hostOf(app), '/crash');
    const row = await waitFor('a restart', async () => {
      const r = await h.ctx.db.selectFrom('instances').selectAll().where('application_id', '=', app.appId).executeTakeFirst();
      return r && r.restart_count >= 1 && r.state === 'healthy' ? r : null;
    });
    expect(row.restart_count).toBe(1);
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');

    const loop = await app.release({ 'app.js': 'process.exit(5)' }, 'web: node app.js\n');
    const d = await settled(h, alice, await deploy(loop));
    expect(d.error).toBe(true);
    // Reported at the first crash, not at the timeout (issue 30).
    expect(d.error_detail).toBe('web.1 exited (exit code 5) during start, before it answered its health check');
    expect(d.failure).toMatchObject({ reason: 'crashed_during_start', exit: { code: 5 } });
    expect(d.error_code).toBe('crash_loop');
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
  });

  it('fails at once when a non-web process crashes on start', async () => {
    const app = await deployableApp(h, alice);
    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { worker: 1 } },
    });
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\nworker: exit 2\n');
    const d = await settled(h, alice, await deploy(rel));
    expect(d.error).toBe(true);
    expect(d.error_code).toBe('crash_loop');
    expect(d.error_detail).toBe('worker.1 exited (exit code 2) during start, before it settled');
    expect(await h.ctx.db.selectFrom('instances').select('id').where('application_id', '=', app.appId).execute()).toEqual([]);
  });

  it('scales web instances up and down without a new release', async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release(
      { 'app.js': NODE_APP('v1'), 'worker.js': 'setInterval(() => {}, 1000)' },
      'web: node app.js\nworker: node worker.js\n',
    );
    expect((await settled(h, alice, await deploy(rel))).complete).toBe(true);
    const counts = async () => {
      const rows = await h.ctx.db
        .selectFrom('instances')
        .select(['process_type', 'state'])
        .where('application_id', '=', app.appId)
        .execute();
      const c: Record<string, number> = {};
      for (const r of rows) if (r.state === 'healthy' || r.state === 'running') c[r.process_type] = (c[r.process_type] ?? 0) + 1;
      return c;
    };
    expect(await counts()).toEqual({ web: 1 });
    const up = await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { web: 3, worker: 1 } },
    });
    expect(up.statusCode).toBe(200);
    await waitFor(
      'scale up',
      async () =>
        JSON.stringify(await counts()) === JSON.stringify({ web: 3, worker: 1 }) ||
        JSON.stringify(await counts()) === JSON.stringify({ worker: 1, web: 3 }),
    );
    await waitFor('route of 3', async () => localRuntime(h.ctx).router.table.upstreams(hostOf(app)).length === 3);
    const ports = new Set<number>();
    for (const u of localRuntime(h.ctx).router.table.upstreams(hostOf(app))) ports.add(u.port);
    expect(ports.size).toBe(3);
    for (let i = 0; i < 6; i++) expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');

    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { web: 1, worker: 0 } },
    });
    await waitFor('scale down', async () => JSON.stringify(await counts()) === JSON.stringify({ web: 1 }));
    expect(localRuntime(h.ctx).router.table.upstreams(hostOf(app))).toHaveLength(1);
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
  });

  it('runs concurrent deploys of one application one at a time, in order', async () => {
    const app = await deployableApp(h, alice);
    const releases = [];
    for (const v of ['v1', 'v2', 'v3']) releases.push(await app.release({ 'app.js': NODE_APP(v) }, 'web: node app.js\n'));
    const ids = await Promise.all(releases.map((r) => deploy(r)));
    const done = [];
    for (const id of ids) done.push(await settled(h, alice, id));
    expect(done.every((d) => d.complete)).toBe(true);
    const spans = done.map((d) => [Date.parse(d.started), Date.parse(d.finished)] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    const last = done.reduce((a, b) => (Date.parse(a.finished) > Date.parse(b.finished) ? a : b));
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe(`v${last.release.version}:hello`);
    const rows = await h.ctx.db.selectFrom('instances').select('release_id').where('application_id', '=', app.appId).execute();
    expect(rows).toEqual([{ release_id: last.release.id }]);
    // The list pages newest first (by the time-ordered id: created_at may tie within a millisecond).
    const page2 = (
      await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/deployments?per_page=2&page=2`, headers: alice.headers })
    ).json();
    expect(page2.pagination).toEqual({ page: 2, per_page: 2, total: 3, pages: 2 });
    const oldest = [...done].sort((a, b) => (a.id < b.id ? -1 : 1))[0];
    expect(page2.items.map((d: { id: string }) => d.id)).toEqual([oldest.id]);
  });

  it('samples CPU, memory, instances and restarts of running processes into observability', async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(rel))).complete).toBe(true);
    await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/scale`,
      headers: alice.headers,
      payload: { process_counts: { web: 2 } },
    });
    await waitFor(
      'two samples with 2 instances',
      async () => {
        const rows = await h.ctx.db
          .selectFrom('metric_samples')
          .selectAll()
          .where('application_id', '=', app.appId)
          .where('pod_count', '=', 2)
          .execute();
        return rows.length >= 2;
      },
      15_000,
      250,
    );
    const r = await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/observability?range=1h`, headers: alice.headers });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.range).toBe('1h');
    expect(body.history.length).toBeGreaterThanOrEqual(1);
    expect(body.history.length).toBeLessThanOrEqual(200);
    const last = body.history.at(-1);
    expect(last.pod_count).toBe(2);
    expect(last.memory_usage_bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(last.cpu_usage_m).toBeGreaterThanOrEqual(0);
    expect(last.restart_count).toBe(0);
    expect(Date.parse(last.timestamp)).toBeGreaterThan(Date.now() - 3_600_000);
    // Default range, every range, and a bad one.
    expect(
      (await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/observability`, headers: alice.headers })).json().range,
    ).toBe('1h');
    for (const range of ['6h', '24h', '7d', '30d']) {
      const x = await h.app.inject({
        method: 'GET',
        url: `/v1/applications/${app.appId}/observability?range=${range}`,
        headers: alice.headers,
      });
      expect(x.json().history.length).toBeGreaterThanOrEqual(1);
    }
    const bad = await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/observability?range=2h`, headers: alice.headers });
    expect([400, 422]).toContain(bad.statusCode);
    // Samples are kept 30 days.
    const old = new Date(Date.now() - 31 * 86_400_000);
    await h.ctx.db
      .insertInto('metric_samples')
      .values({ application_id: app.appId, environment_id: app.envId, sampled_at: old, pod_count: 9 })
      .execute();
    await new MetricsSampler(h.ctx.db, h.ctx.runtime!, 60, console).sampleOnce();
    const kept = await h.ctx.db
      .selectFrom('metric_samples')
      .select('pod_count')
      .where('application_id', '=', app.appId)
      .where('sampled_at', '<=', old)
      .execute();
    expect(kept).toEqual([]);
  });
});
