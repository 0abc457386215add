/**
 * Issue 17 (guarded rollouts): a deployment that completes under its environment's guard is
 * watched through the edge's counters; a release answering 500 to half the requests under a
 * steady load is rolled back to the previous one (with its configuration) within the window,
 * recorded as `rolled_back` naming the 5xx ratio, with an application event; a healthy
 * release under the same load is left alone.
 */
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

/** Answers 500 to every second request (its health check passes). */
const HALF_BROKEN_APP = (version: string) => `
const http = require('http');
let n = 0;
http.createServer((req, res) => {
  if (req.url === '/health') { res.end('ok'); return; }
  if (++n % 2 === 0) { res.statusCode = 500; res.end('boom'); return; }
  res.end('${version}:' + process.env.GREETING);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 50,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 2000,
      REQUEST_STATS_FLUSH_MS: 200,
      GUARD_CHECK_MS: 250,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;
const routerPort = () => localRuntime(h.ctx).router.port;
const api = async (method: string, url: string, payload?: unknown, user = alice) => {
  const r = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: r.statusCode, body: r.body ? r.json() : undefined };
};
const deploy = async (releaseId: string) => {
  const r = await api('POST', `/releases/${releaseId}/deploy`);
  expect(r.status).toBe(202);
  return r.body.deployment_id as string;
};

/** A steady load through the edge: two clients, one request each every 10 ms, until stopped. */
function steadyLoad(d: Deployable) {
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  const statuses = new Map<number, number>();
  let stopped = false;
  const client = async () => {
    while (!stopped) {
      const r = await routerGet(routerPort(), hostOf(d), '/', 5000, agent).catch(() => ({ status: 0, body: '' }));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const running = Promise.all([client(), client()]);
  return {
    statuses,
    async stop() {
      stopped = true;
      await running;
      agent.destroy();
    },
  };
}

describe('guard settings', () => {
  it('are set, read and removed per environment; bad input is a clear 4xx and other organizations get nothing', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    expect((await api('GET', `/applications/${app.appId}/guard`)).status).toBe(404);
    const none = await api('PUT', `/applications/${app.appId}/guard`, { window_seconds: 60 });
    expect(none.status).toBe(422);
    expect(none.body.message).toMatch(/at least one threshold/);
    expect((await api('PUT', `/applications/${app.appId}/guard`, { max_error_ratio: 1.5 })).status).toBe(422);
    expect((await api('PUT', `/applications/${app.appId}/guard`, { max_error_ratio: 0.1, nope: 1 })).status).toBe(422);
    expect((await api('PUT', `/applications/${app.appId}/guard`, { max_error_ratio: 0.1, environment: 'nowhere' })).status).toBe(404);

    const put = await api('PUT', `/applications/${app.appId}/guard`, { max_error_ratio: 0.1, max_restarts: 2 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      environment_id: app.envId,
      window_seconds: 300,
      max_error_ratio: 0.1,
      max_p95_factor: null,
      max_restarts: 2,
      min_requests: 20,
    });
    expect((await api('GET', `/applications/${app.appId}/guard?environment=production`)).body).toEqual(put.body);

    const mallory = await h.user();
    expect([403, 404]).toContain((await api('GET', `/applications/${app.appId}/guard`, undefined, mallory)).status);
    expect([403, 404]).toContain((await api('PUT', `/applications/${app.appId}/guard`, { max_error_ratio: 0.9 }, mallory)).status);
    expect([403, 404]).toContain((await api('DELETE', `/applications/${app.appId}/guard`, undefined, mallory)).status);
    expect((await api('GET', `/applications/${app.appId}/guard`)).body.max_error_ratio).toBe(0.1);

    expect((await api('DELETE', `/applications/${app.appId}/guard`)).body).toEqual({ ok: true });
    expect((await api('GET', `/applications/${app.appId}/guard`)).status).toBe(404);
  });
});

describe('a guarded rollout', () => {
  it('rolls a release answering 500 to half the requests back within its window, and leaves a healthy one alone', async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/health' });
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const first = await settled(h, alice, await deploy(v1));
    expect(first).toMatchObject({ status: 'complete', guard: null });
    const WINDOW = 20;
    expect(
      (await api('PUT', `/applications/${app.appId}/guard`, { window_seconds: WINDOW, max_error_ratio: 0.2, min_requests: 30 })).status,
    ).toBe(200);

    const load = steadyLoad(app);
    try {
      // The bad release: it completes (its health check passes), then the guard sees its 5xx.
      const v2 = await app.release({ 'app.js': HALF_BROKEN_APP('v2') }, 'web: node app.js\n');
      const bad = await deploy(v2);
      const completed = await settled(h, alice, bad);
      expect(completed.status === 'complete' || completed.status === 'rolled_back').toBe(true);
      // While it watches, GET shows the guard's verdict and what it measured.
      const watching = await waitFor('the guard watching or done', async () => {
        const d = (await api('GET', `/deployments/${bad}/detail`)).body;
        return d.guard ? d : null;
      });
      expect(watching.guard.settings).toMatchObject({ window_seconds: WINDOW, max_error_ratio: 0.2 });
      expect(['watching', 'rolled_back']).toContain(watching.guard.status);

      const rolledBack = await waitFor(
        'the bad release rolled back',
        async () => {
          const d = (await api('GET', `/deployments/${bad}/detail`)).body;
          return d.status === 'rolled_back' && d.guard.rollback_deployment_id ? d : null;
        },
        { timeout: 60_000, every: 200 },
      );
      expect(rolledBack.error).toBe(true);
      expect(rolledBack.error_detail).toMatch(
        /^Rolled back by the guard: 5xx ratio 0\.\d+ \(\d+ of \d+ requests\) above the guard's 0\.2$/,
      );
      expect(rolledBack.guard).toMatchObject({ status: 'rolled_back', breach: expect.stringMatching(/5xx ratio/) });
      expect(rolledBack.guard.measures.error_ratio).toBeGreaterThan(0.2);
      expect(rolledBack.guard.measures.requests).toBeGreaterThanOrEqual(30);
      // Within the window: the breach was judged before the watch would have ended.
      expect(Date.parse(rolledBack.updated)).toBeLessThan(Date.parse(rolledBack.guard.watch_until));
      expect(rolledBack.deploy_log).toMatch(/guard: 5xx ratio .* rolling back to v1/);

      // The rollback is an ordinary deployment of v1, with v1's configuration; it serves again.
      const rollback = await settled(h, alice, rolledBack.guard.rollback_deployment_id);
      expect(rollback).toMatchObject({
        status: 'complete',
        is_rollback: true,
        rollback_of: v2,
        release: { id: v1, version: 1 },
        guard: null,
      });
      await waitFor('v1 serving again', async () => {
        const r = await routerGet(routerPort(), hostOf(app));
        return r.status === 200 && r.body === 'v1:hello';
      });
      const event = await h.ctx.db
        .selectFrom('application_events')
        .selectAll()
        .where('application_id', '=', app.appId)
        .where('kind', '=', 'deployment.rolled_back')
        .executeTakeFirstOrThrow();
      expect(event).toMatchObject({ subject_id: bad, status: 'rolled_back' });
      expect(event.data).toMatchObject({
        measure: '5xx_ratio',
        threshold: 0.2,
        rollback_deployment_id: rollback.id,
        rolled_back_to: { version: 1 },
      });

      // A healthy release under the same load is watched for the whole window and left serving.
      const v3 = await app.release({ 'app.js': NODE_APP('v3') }, 'web: node app.js\n');
      const good = await deploy(v3);
      expect(await settled(h, alice, good)).toMatchObject({ status: 'complete' });
      const passed = await waitFor(
        'the healthy release passing its guard',
        async () => {
          const d = (await api('GET', `/deployments/${good}/detail`)).body;
          return d.guard?.status !== 'watching' ? d : null;
        },
        { timeout: 60_000, every: 200 },
      );
      expect(passed).toMatchObject({ status: 'complete', error: false, error_detail: null, guard: { status: 'passed', breach: null } });
      expect(passed.guard.measures.errors_5xx).toBe(0);
      expect(passed.guard.measures.requests).toBeGreaterThan(30);
      expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v3:hello');
    } finally {
      await load.stop();
    }
    // No loop: the rolled-back release was never deployed again (v1, v2, the rollback, v3).
    const list = (await api('GET', `/applications/${app.appId}/deployments`)).body;
    expect(list.items.map((d: { release: { version: number } }) => d.release.version)).toEqual([3, 1, 2, 1]);
    expect(load.statuses.get(200)).toBeGreaterThan(0);
  }, 180_000);
});
