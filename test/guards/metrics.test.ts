/**
 * Issue 17 (request metrics): the observability endpoint's requests per second, status classes
 * and latency percentiles per process type, and `GET /metrics` in Prometheus text format behind
 * its scrape token, parsed with a text-format parser; its counters move with traffic.
 */
import { readFileSync } from 'node:fs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { parse as parseYaml } from 'yaml';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldOldRequestStats } from '../../src/platform/edge/index.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

const TOKEN = 'scrape-token-0123456789abcdef';

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, REQUEST_STATS_FLUSH_MS: 200, METRICS_TOKEN: TOKEN },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;
const scrape = async (authorization?: string) =>
  h.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });

/** The value of one series (labels matched as a subset), 0 when absent. */
async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const r = await scrape(`Bearer ${TOKEN}`);
  expect(r.statusCode).toBe(200);
  const family = parsePrometheusTextFormat(r.body).find((f) => f.name === name);
  const found = family?.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)) ?? [];
  return found.reduce((sum, m) => sum + Number(m.value ?? m.count ?? 0), 0);
}

describe('GET /metrics', () => {
  it('answers 401 without the scrape token or with a wrong one (a user session is not enough)', async () => {
    expect((await scrape()).statusCode).toBe(401);
    expect((await scrape('Bearer wrong-token')).statusCode).toBe(401);
    const asUser = await h.app.inject({ method: 'GET', url: '/metrics', headers: alice.headers });
    expect(asUser.statusCode).toBe(401);
    expect(asUser.json()).toMatchObject({ status: 401, message: expect.stringMatching(/metrics token/) });
  });

  it('parses as Prometheus text; platform and per-application counters move with traffic; observability shows rates and percentiles', async () => {
    const app = await deployableApp(h, alice);
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const dep = await h.app.inject({ method: 'POST', url: `/v1/releases/${v1}/deploy`, headers: alice.headers });
    expect(await settled(h, alice, dep.json().deployment_id)).toMatchObject({ status: 'complete' });

    const text = (await scrape(`Bearer ${TOKEN}`)).body;
    const families = parsePrometheusTextFormat(text);
    const names = families.map((f) => f.name);
    for (const name of [
      'slipway_http_requests_total',
      'slipway_http_request_duration_seconds',
      'slipway_jobs',
      'slipway_job_wait_seconds',
      'slipway_builds',
      'slipway_deployments',
      'slipway_instances',
      'slipway_app_requests_total',
      'slipway_app_memory_limit_ratio',
      'slipway_alert_log_matches_total',
    ])
      expect(names, name).toContain(name);
    // docs/prometheus-alerts.yml: well-formed rules over metrics this endpoint serves.
    const alerts = parseYaml(readFileSync(new URL('../../docs/prometheus-alerts.yml', import.meta.url), 'utf8')) as {
      groups: Array<{
        name: string;
        rules: Array<{ alert: string; expr: string; labels: { severity: string }; annotations: { summary: string } }>;
      }>;
    };
    const rules = alerts.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const rule of rules) {
      expect(rule).toMatchObject({ alert: expect.stringMatching(/^Slipway/), labels: { severity: expect.any(String) } });
      expect(rule.annotations.summary, rule.alert).toBeTruthy();
      for (const metric of rule.expr.match(/slipway_[a-z_]+/g) ?? [])
        expect(names, `${rule.alert}: ${metric}`).toContain(metric.replace(/_(bucket|sum|count)$/, ''));
    }
    // docs/grafana-dashboard.json: every panel's queries name served metrics too.
    const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    for (const panel of dashboard.panels)
      for (const metric of panel.targets.flatMap((t) => t.expr.match(/slipway_[a-z_]+/g) ?? []))
        expect(names, `${panel.title}: ${metric}`).toContain(metric.replace(/_(bucket|sum|count)$/, ''));
    expect(await sample('slipway_deployments', { status: 'complete' })).toBeGreaterThanOrEqual(1);
    expect(await sample('slipway_instances', { state: 'healthy' })).toBeGreaterThanOrEqual(1);
    expect(await sample('slipway_jobs', { kind: 'deploy', state: 'completed' })).toBeGreaterThanOrEqual(1);

    const ok = { application_id: app.appId, environment: 'production', process_type: 'web', status_class: '2xx' };
    const before = await sample('slipway_app_requests_total', ok);
    const port = localRuntime(h.ctx).router.port;
    for (let i = 0; i < 25; i++) expect((await routerGet(port, hostOf(app))).status).toBe(200);
    await waitFor('the edge counters in /metrics', async () => (await sample('slipway_app_requests_total', ok)) === before + 25);

    // The API's own counter moves with its requests.
    const route = { route: '/v1/applications/:application_id/observability' };
    const apiBefore = await sample('slipway_http_requests_total', route);
    const obs = await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/observability?range=1h`, headers: alice.headers });
    expect(obs.statusCode).toBe(200);
    expect(await sample('slipway_http_requests_total', { ...route, status_class: '2xx' })).toBe(apiBefore + 1);

    const web = obs.json().requests.filter((r: { process_type: string }) => r.process_type === 'web');
    const total = web.reduce((n: number, r: { requests: number }) => n + r.requests, 0);
    expect(total).toBe(before + 25);
    const last = web.at(-1);
    expect(last.status['2xx']).toBe(last.requests);
    expect(last.requests_per_second).toBeCloseTo(last.requests / 60, 2);
    expect(last.latency_ms.p50).toBeGreaterThan(0);
    expect(last.latency_ms.p99).toBeGreaterThanOrEqual(last.latency_ms.p95);
    expect(last.latency_ms.p95).toBeGreaterThanOrEqual(last.latency_ms.p50);

    // Minutes older than the detail window are folded into one total per process type: the
    // table stops growing, the Prometheus counter keeps its value, the recent views lose them.
    const served = await sample('slipway_app_requests_total', ok);
    await h.ctx.db
      .updateTable('request_stats')
      .set({ minute: sql<Date>`minute - interval '40 days'` })
      .where('application_id', '=', app.appId)
      .execute();
    for (let i = 0; i < 3; i++) expect((await routerGet(port, hostOf(app))).status).toBe(200);
    await waitFor('the new minute in /metrics', async () => (await sample('slipway_app_requests_total', ok)) === served + 3);
    expect(await foldOldRequestStats(h.ctx.db)).toBeGreaterThanOrEqual(1);
    expect(await foldOldRequestStats(h.ctx.db)).toBe(0);
    expect(await sample('slipway_app_requests_total', ok)).toBe(served + 3);
    const minutes = await h.ctx.db
      .selectFrom('request_stats')
      .select(['minute', 'requests'])
      .where('application_id', '=', app.appId)
      .orderBy('minute')
      .execute();
    expect(minutes[0]).toEqual({ minute: new Date(0), requests: served });
    expect(minutes.slice(1).every((m) => m.minute.getTime() > Date.now() - 3_600_000)).toBe(true);
    const recent = await h.app.inject({
      method: 'GET',
      url: `/v1/applications/${app.appId}/observability?range=1h`,
      headers: alice.headers,
    });
    const recentWeb = recent.json().requests.filter((r: { process_type: string }) => r.process_type === 'web');
    expect(recentWeb.reduce((n: number, r: { requests: number }) => n + r.requests, 0)).toBe(3);
  }, 120_000);
});
