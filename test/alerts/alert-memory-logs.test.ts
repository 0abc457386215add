/**
 * Issue 33 (alert rules over memory and logs): a pipeline-deployed application on the smallest
 * pod class (384 MiB) grows its memory close to the limit and its `memory_percent` rule fires,
 * then resolves once the memory is given back; the same application writes "Payment FAILED"
 * lines and a case-blind `log_matches` rule fires and resolves after, while a case-sensitive one
 * never counts them. A pattern is a plain substring: bad combinations are a 422 that makes nothing.
 */
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slipway } from '../cli/slipway.js';
import { call, expectError } from '../control-plane/fixtures.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';

/** /grow?mib=N holds N MiB (touched), /free gives it back; /log?n=N writes N payment failures. */
const APP = `
const http = require('http');
let held = null;
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/grow') held = Buffer.alloc(Number(url.searchParams.get('mib')) * 1048576, 1);
  if (url.pathname === '/free') { held = null; global.gc(); }
  if (url.pathname === '/log') for (let i = 0; i < Number(url.searchParams.get('n')); i++) console.log('order ' + i + ': Payment FAILED (card declined)');
  res.end('ok');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, OBSERVABILITY_SAMPLE_SECONDS: 1, ALERT_EVALUATION_SECONDS: 1 },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const get = (d: Deployable, path: string) =>
  routerGet(localRuntime(h.ctx).router.port, `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`, path, 10_000);

describe('alert rules over memory and log lines', () => {
  it('fire when an instance nears its memory limit and when a pattern is logged, and resolve after', async () => {
    const app = await deployableApp(h, alice);
    const base = `/v1/organizations/${app.slugs.org}/alert-rules`;
    const scaled = await call(h, 'POST', `/v1/applications/${app.appId}/scale`, alice, { process_pod_classes: { web: 'm1.small' } });
    expect(scaled.status, scaled.raw).toBe(200);
    const release = await app.release({ 'app.js': APP }, 'web: node --expose-gc app.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect((await settled(h, alice, deployed.body.deployment_id)).status).toBe('complete');

    // Bad input: a clear 422, nothing made.
    const logs = { metric: 'log_matches', threshold: 3, window_seconds: 3, application_id: app.appId, environment: 'production' };
    expectError(await call(h, 'POST', base, alice, { ...logs, name: 'x' }), 422);
    expectError(await call(h, 'POST', base, alice, { name: 'x', metric: 'log_matches', threshold: 3, pattern: 'failed' }), 422);
    expectError(await call(h, 'POST', base, alice, { name: 'x', metric: 'restarts', threshold: 3, pattern: 'failed' }), 422);
    expectError(await call(h, 'POST', base, alice, { name: 'x', metric: 'memory_percent', threshold: 100 }), 422);
    expectError(await call(h, 'POST', base, alice, { ...logs, name: 'x', pattern: 'p'.repeat(201) }), 422);
    expect((await call(h, 'GET', base, alice)).body).toEqual([]);

    const memory = await call(h, 'POST', base, alice, {
      name: 'memory',
      metric: 'memory_percent',
      threshold: 60,
      window_seconds: 3,
      application_id: app.appId,
    });
    expect(memory.status, memory.raw).toBe(201);
    const home = mkdtempSync(join(tmpdir(), 'slipway-alerts-home-'));
    const cli = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      SLIPWAY_API_KEY: alice.apiKey,
    };
    const added = await slipway(
      ['alerts', 'add', 'payments', '--metric', 'log_matches', '--pattern', 'payment failed', '--ignore-case', '--threshold', '3'].concat([
        '--window',
        '3s',
        '--app-id',
        app.appId,
        '--environment',
        'production',
        '--org',
        app.slugs.org,
        '--json',
      ]),
      cli,
    );
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ metric: 'log_matches', pattern: 'payment failed', ignore_case: true, state: 'ok' });
    // Case-sensitive: the app writes "Payment FAILED", never this.
    expect((await call(h, 'POST', base, alice, { ...logs, name: 'exact', pattern: 'payment failed' })).status).toBe(201);

    const rule = async (name: string) => (await call(h, 'GET', `${base}/${name}`, alice)).body;
    const reaches = (name: string, state: string) =>
      waitFor(`${name} to be ${state}`, async () => ((await rule(name)).state === state ? rule(name) : null), {
        timeout: 30_000,
        every: 200,
      });
    // Judged once with the instance idle: well under the threshold.
    const idle = await waitFor('a memory value', async () => ((await rule('memory')).value !== null ? rule('memory') : null), {
      timeout: 30_000,
      every: 200,
    });
    expect(idle.value).toBeLessThan(60);
    expect(idle.state).toBe('ok');

    expect((await get(app, '/grow?mib=260')).status).toBe(200);
    const firing = await reaches('memory', 'firing');
    expect(firing.value).toBeGreaterThan(60);
    expect(firing.value).toBeLessThan(100);
    expect((await get(app, '/free')).status).toBe(200);
    await reaches('memory', 'resolved');

    // Payment failures written while the rule is watched (each burst in the window), then none.
    let logging = true;
    const writer = (async () => {
      while (logging) {
        await get(app, '/log?n=5').catch(() => null);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    try {
      const fired = await reaches('payments', 'firing');
      expect(fired.value).toBeGreaterThan(3);
    } finally {
      logging = false;
      await writer;
    }
    await reaches('payments', 'resolved');
    const history = (await call(h, 'GET', `${base}/payments/history`, alice)).body;
    expect(history.map((t: { from: string; to: string }) => `${t.from}>${t.to}`)).toEqual([
      'firing>resolved',
      'pending>firing',
      'ok>pending',
    ]);
    const exact = await rule('exact');
    expect(exact).toMatchObject({ state: 'ok', value: 0 });
    expect((await call(h, 'GET', `${base}/exact/history`, alice)).body).toEqual([]);
  });
});
