/**
 * Issue 17, autoscaling on the local runtime, through the HTTP API and the real pipeline
 * (deployment, edge, request counters, metrics sampler, reconcile jobs): a load above the
 * requests-per-second target scales `web` up within two sampling intervals, never past max,
 * and back down to min once the cooldown has passed.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideScale } from '../../src/modules/autoscaling/index.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, loadDuring, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

const SAMPLE_SECONDS = 1;
const COOLDOWN_SECONDS = 8;
// Low, so that two load connections ask for more than max × target even on a loaded machine (~14 req/s seen there).
const TARGET_RPS = 2;

let h: Harness;
let alice: TestUser;
let mallory: TestUser;

beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      OBSERVABILITY_SAMPLE_SECONDS: SAMPLE_SECONDS,
      REQUEST_STATS_FLUSH_MS: 100,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      PIPELINE_CONCURRENCY: 2,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  mallory = await h.user();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const api = async (method: string, url: string, payload?: unknown, user = alice) => {
  const r = await h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: r.statusCode, body: r.body ? r.json() : undefined };
};
const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;

async function deployedApp(): Promise<Deployable> {
  const app = await deployableApp(h, alice);
  const rel = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\nworker: sleep 100000\n');
  const r = await api('POST', `/releases/${rel}/deploy`);
  expect(r.status).toBe(202);
  const d = await settled(h, alice, r.body.deployment_id);
  expect(d.status, d.deploy_log).toBe('complete');
  return app;
}

/** Web instances of the application the runtime has started and not stopped. */
const runningWeb = async (app: Deployable) => {
  const rows = await h.ctx.db
    .selectFrom('instances')
    .select('id')
    .where('application_id', '=', app.appId)
    .where('process_type', '=', 'web')
    .where('state', 'in', ['healthy', 'running'])
    .execute();
  return rows.length;
};
const scaleEvents = async (app: Deployable) =>
  (await api('GET', `/applications/${app.appId}/scale-events?per_page=100`)).body.items.reverse();

describe('autoscaling API', () => {
  it('stores a policy per process type, refuses bad ones (422) and other organizations (403/404), documents the routes', async () => {
    const app = await deployableApp(h, alice);
    const put = await api('PUT', `/applications/${app.appId}/autoscaling/web`, { min: 1, max: 4, target: { cpu_percent: 70 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ process_type: 'web', min: 1, max: 4, target: { cpu_percent: 70 }, cooldown_seconds: 300 });
    expect(put.body.environment_id).toBe(app.envId);
    const replaced = await api('PUT', `/applications/${app.appId}/autoscaling/web`, {
      min: 2,
      max: 3,
      target: { requests_per_second: 50 },
      cooldown_seconds: 60,
    });
    expect(replaced.body).toMatchObject({ id: put.body.id, min: 2, max: 3, target: { requests_per_second: 50 }, cooldown_seconds: 60 });
    expect((await api('GET', `/applications/${app.appId}/autoscaling`)).body).toEqual([replaced.body]);

    const bad = [
      { min: 3, max: 2, target: { cpu_percent: 50 } },
      { min: 0, max: 2, target: { cpu_percent: 50 } },
      { min: 1, max: 101, target: { cpu_percent: 50 } },
      { min: 1, max: 2, target: { cpu_percent: 50, requests_per_second: 3 } },
      { min: 1, max: 2, target: {} },
      { min: 1, max: 2, target: { requests_per_second: 0 } },
    ];
    for (const body of bad) {
      const r = await api('PUT', `/applications/${app.appId}/autoscaling/web`, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body).toMatchObject({ status: 422, message: expect.any(String) });
    }
    const workerRps = await api('PUT', `/applications/${app.appId}/autoscaling/worker`, {
      min: 1,
      max: 2,
      target: { requests_per_second: 3 },
    });
    expect(workerRps.status).toBe(422);
    expect(workerRps.body.message).toContain('web');
    expect(
      (await api('PUT', `/applications/${app.appId}/autoscaling/web?environment=nope`, { min: 1, max: 2, target: { cpu_percent: 5 } }))
        .status,
    ).toBe(404);
    expect((await api('GET', `/applications/${app.appId}/autoscaling`)).body).toEqual([replaced.body]);

    for (const [method, url] of [
      ['GET', `/applications/${app.appId}/autoscaling`],
      ['PUT', `/applications/${app.appId}/autoscaling/web`],
      ['DELETE', `/applications/${app.appId}/autoscaling/web`],
      ['GET', `/applications/${app.appId}/scale-events`],
    ] as const) {
      const r = await api(method, url, method === 'PUT' ? { min: 1, max: 2, target: { cpu_percent: 5 } } : undefined, mallory);
      expect([403, 404], `${method} ${url}`).toContain(r.status);
    }
    expect((await api('DELETE', `/applications/${app.appId}/autoscaling/web`)).body).toEqual({ ok: true });
    expect((await api('DELETE', `/applications/${app.appId}/autoscaling/web`)).status).toBe(404);
    expect((await api('GET', `/applications/${app.appId}/autoscaling`)).body).toEqual([]);

    const doc = (await h.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(doc.paths['/v1/applications/{application_id}/autoscaling/{process_type}'].put.requestBody).toBeDefined();
    expect(doc.paths['/v1/applications/{application_id}/scale-events'].get).toBeDefined();
  });

  it('decides as the HorizontalPodAutoscaler does: ceil(load / target), within min/max, down only after the cooldown', () => {
    const policy = { min_count: 1, max_count: 5, cooldown_seconds: 60, last_scaled_at: new Date('2026-01-01T00:00:00Z') };
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    const rps = (perInstance: number | null) => ({ kind: 'requests_per_second' as const, target: 10, perInstance });
    expect(decideScale(policy, 2, rps(25), at(1))).toMatchObject({ to: 5 });
    expect(decideScale(policy, 2, rps(100), at(1))).toMatchObject({ to: 5 });
    expect(decideScale(policy, 2, rps(10.5), at(1))).toBeNull();
    expect(decideScale(policy, 4, rps(1), at(30))).toBeNull();
    expect(decideScale(policy, 4, rps(1), at(60))).toMatchObject({ to: 1 });
    expect(decideScale(policy, 4, rps(null), at(60))).toBeNull();
    expect(decideScale(policy, 7, rps(null), at(1))).toMatchObject({ to: 5, reason: expect.stringContaining('maximum') });
    expect(decideScale(policy, 0, rps(null), at(1))).toMatchObject({ to: 1, reason: expect.stringContaining('minimum') });
    const cpu = decideScale(policy, 2, { kind: 'cpu_percent', target: 50, perInstance: 150 }, at(1));
    expect(cpu).toEqual({ to: 5, reason: 'CPU 150% per instance against a target of CPU 50%: scaled up' });
  });
});

describe('autoscaling on requests per second (local runtime)', () => {
  it('scales web up within two sampling intervals under load, holds at max, and back to min after the cooldown', async () => {
    const app = await deployedApp();
    expect(await runningWeb(app)).toBe(1);
    const put = await api('PUT', `/applications/${app.appId}/autoscaling/web`, {
      min: 1,
      max: 3,
      target: { requests_per_second: TARGET_RPS },
      cooldown_seconds: COOLDOWN_SECONDS,
    });
    expect(put.status).toBe(200);

    let stopLoad!: () => void;
    const loadStopped = new Promise<void>((r) => (stopLoad = r));
    const loadStartedAt = (await sql<{ now: Date }>`SELECT now()`.execute(h.ctx.db)).rows[0]!.now;
    const load = loadDuring(localRuntime(h.ctx).router.port, hostOf(app), loadStopped, 2);

    const up = await waitFor('the scale-up event', async () => (await scaleEvents(app)).find((e: { to: number }) => e.to > 1), 30_000);
    // Measured in sampling intervals (each sample is a row): the first sample with the load is the baseline, the next decides.
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM metric_samples
      WHERE application_id = ${app.appId} AND sampled_at >= ${loadStartedAt} AND sampled_at <= ${new Date(up.created_at)}`.execute(
      h.ctx.db,
    );
    expect(Number(rows[0]!.n)).toBeLessThanOrEqual(2);
    expect(up).toMatchObject({ process_type: 'web', from: 1, to: 3, environment_id: app.envId });
    expect(up.reason).toContain(`requests/s per instance against a target of ${TARGET_RPS} requests/s: scaled up`);
    // The load asked for more than max: max capped it.
    expect((up.metric.requests_per_second as number) / TARGET_RPS).toBeGreaterThan(3);

    await waitFor('three web instances', async () => (await runningWeb(app)) === 3, 30_000);
    const described = await api('GET', `/applications/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`);
    expect(described.body.process_counts).toMatchObject({ web: 3 });
    // Still under load for three more samples: nothing past max.
    const samplesNow = async () =>
      Number(
        (await sql<{ n: string }>`SELECT count(*) AS n FROM metric_samples WHERE application_id = ${app.appId}`.execute(h.ctx.db)).rows[0]!
          .n,
      );
    const seen = await samplesNow();
    await waitFor('three more samples', async () => (await samplesNow()) >= seen + 3, 30_000);
    expect((await scaleEvents(app)).map((e: { to: number }) => e.to)).toEqual([3]);

    stopLoad();
    const report = await load;
    expect(report.total).toBeGreaterThan(0);
    expect(report.failed, report.failures.slice(0, 5).join('\n')).toBe(0);

    const down = await waitFor('the scale-down event', async () => (await scaleEvents(app)).find((e: { to: number }) => e.to < 3), 60_000);
    expect(down).toMatchObject({ from: 3, to: 1 });
    expect(down.reason).toContain(`after the cooldown of ${COOLDOWN_SECONDS}s`);
    expect(new Date(down.created_at).getTime() - new Date(up.created_at).getTime()).toBeGreaterThanOrEqual(COOLDOWN_SECONDS * 1000);
    await waitFor('one web instance', async () => (await runningWeb(app)) === 1, 30_000);
    const all = await scaleEvents(app);
    expect(all.every((e: { to: number }) => e.to >= 1 && e.to <= 3)).toBe(true);

    // Each change is an application event too, and the policy shows its last change.
    const events = await h.ctx.db
      .selectFrom('application_events')
      .select(['kind', 'data'])
      .where('application_id', '=', app.appId)
      .where('kind', '=', 'autoscale.scaled')
      .execute();
    expect(events.map((e) => (e.data as { to: number }).to)).toEqual([3, 1]);
    const policy = (await api('GET', `/applications/${app.appId}/autoscaling`)).body[0];
    expect(Date.parse(policy.last_scaled_at)).toBeGreaterThanOrEqual(Date.parse(down.created_at));
  }, 180_000);
});
