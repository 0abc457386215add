/**
 * Issue 33 (alert rules): an application deployed by the pipeline answers 500s in a burst through
 * the edge; its organization's error-rate rule goes pending, then firing, and a Slack-shaped
 * receiver started here gets `alert.firing`; once the errors stop the rule resolves and says so.
 * A rule silenced from the CLI records the same transitions and notifies nothing. Bad input is a
 * 4xx that changes nothing, and another organization sees none of it.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:http';
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

/** Answers 500 on /fail, 200 elsewhere. */
const FLAKY_APP = `
const http = require('http');
http.createServer((req, res) => {
  res.statusCode = req.url === '/fail' ? 500 : 200;
  res.end(req.url);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

class SlackReceiver {
  readonly messages: Array<{ path: string; body: { text: string; blocks: Array<Record<string, unknown>> } }> = [];
  private server!: Server;
  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.messages.push({ path: req.url ?? '', body: JSON.parse(body) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
  }
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  /** Messages whose text mentions the rule. */
  about(rule: string) {
    return this.messages.filter((m) => JSON.stringify(m.body).includes(`Alert ${rule} `));
  }
  close() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

let h: Harness;
let alice: TestUser;
const receiver = new SlackReceiver();

beforeAll(async () => {
  await receiver.start();
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      REQUEST_STATS_FLUSH_MS: 200,
      ALERT_EVALUATION_SECONDS: 1,
      WEBHOOK_ALLOW_PRIVATE: true,
      WEBHOOK_RETRY_DELAY_SECONDS: 1,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await receiver.close();
});

const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;

/** Requests through the edge to `path()` (read each time, so the test turns errors on and off), until stopped. */
function load(d: Deployable, path: () => string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  let stopped = false;
  const client = async () => {
    while (!stopped) {
      await routerGet(localRuntime(h.ctx).router.port, hostOf(d), path(), 5000, agent).catch(() => null);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const running = Promise.all([client(), client()]);
  return {
    async stop() {
      stopped = true;
      await running;
      agent.destroy();
    },
  };
}

describe('alert rules', () => {
  it('fire on an error burst, notify Slack, resolve when the errors stop; a silenced rule notifies nothing', async () => {
    const app = await deployableApp(h, alice);
    const org = app.slugs.org;
    const base = `/v1/organizations/${org}/alert-rules`;
    const release = await app.release({ 'app.js': FLAKY_APP }, 'web: node app.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect((await settled(h, alice, deployed.body.deployment_id)).status).toBe('complete');

    const channel = await call(h, 'POST', `/v1/organizations/${org}/notification-channels`, alice, {
      kind: 'slack',
      url: `${receiver.url}/slack/hook`,
      events: ['alert.firing', 'alert.resolved'],
    });
    expect(channel.status, channel.raw).toBe(201);

    // Bad input: a clear 4xx, nothing made.
    const rule = { metric: 'error_rate', threshold: 0.5, window_seconds: 3, for_seconds: 1, min_requests: 5 };
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'x', environment: 'production' }), 422);
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'x', threshold: 1.5 }), 422);
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'x', metric: 'cpu' }), 422);
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'x', application_id: app.appId, environment: 'nowhere' }), 404);
    const other = await deployableApp(h, alice);
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'x', application_id: other.appId }), 404);
    expect((await call(h, 'GET', base, alice)).body).toEqual([]);

    const errors = await call(h, 'POST', base, alice, { ...rule, name: 'errors', application_id: app.appId, environment: 'production' });
    expect(errors.status, errors.raw).toBe(201);
    expect(errors.body).toMatchObject({ name: 'errors', application: app.slugs.app, environment: 'production', state: 'ok' });
    expectError(await call(h, 'POST', base, alice, { ...rule, name: 'errors' }), 409);
    const quiet = await call(h, 'POST', base, alice, { ...rule, name: 'quiet', application_id: app.appId });
    expect(quiet.status, quiet.raw).toBe(201);

    // Another organization's member sees and changes nothing.
    const mallory = await h.user();
    expect([403, 404]).toContain((await call(h, 'GET', base, mallory)).status);
    expect([403, 404]).toContain((await call(h, 'PUT', `${base}/errors/silence`, mallory, { for_seconds: 60 })).status);

    // Silenced from the CLI.
    const home = mkdtempSync(join(tmpdir(), 'slipway-alerts-home-'));
    const env = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`,
      SLIPWAY_API_KEY: alice.apiKey,
    };
    const silenced = await slipway(['alerts', 'silence', 'quiet', '--for', '1h', '--org', org, '--json'], env);
    expect(silenced.code, silenced.stderr).toBe(0);
    const until = Date.parse(JSON.parse(silenced.stdout).silenced_until);
    expect(until - Date.now()).toBeGreaterThan(3500_000);

    const stateOf = async (name: string) => (await call(h, 'GET', `${base}/${name}`, alice)).body.state as string;
    let path = '/fail';
    const traffic = load(app, () => path);
    try {
      await waitFor('the rule to go pending', async () => ((await stateOf('errors')) === 'pending' ? true : null), {
        timeout: 30_000,
        every: 100,
      });
      await waitFor('the rule to fire', async () => ((await stateOf('errors')) === 'firing' ? true : null), {
        timeout: 30_000,
        every: 100,
      });
      const fired = await waitFor('the firing message', () => receiver.about('errors')[0] ?? null, { timeout: 30_000, every: 100 });
      expect(fired.path).toBe('/slack/hook');
      expect(fired.body.text).toBe(`Alert firing: ${app.slugs.app} (production)`);
      expect(JSON.stringify(fired.body.blocks)).toContain('Alert errors is firing: error_rate 1 above 0.5');

      path = '/ok';
      await waitFor('the rule to resolve', async () => ((await stateOf('errors')) === 'resolved' ? true : null), {
        timeout: 30_000,
        every: 100,
      });
      const resolved = await waitFor('the resolved message', () => receiver.about('errors')[1] ?? null, { timeout: 30_000, every: 100 });
      expect(resolved.body.text).toBe(`Alert resolved: ${app.slugs.app} (production)`);
      await waitFor('the silenced rule to resolve too', async () => ((await stateOf('quiet')) === 'resolved' ? true : null), {
        timeout: 30_000,
        every: 100,
      });
    } finally {
      await traffic.stop();
    }

    const history = (await call(h, 'GET', `${base}/errors/history`, alice)).body;
    expect(history.map((t: { from: string; to: string }) => `${t.from}>${t.to}`)).toEqual([
      'firing>resolved',
      'pending>firing',
      'ok>pending',
    ]);
    expect(history.map((t: { notified: boolean }) => t.notified)).toEqual([true, true, false]);
    expect(history[1].value).toBe(1);
    // The silenced rule went through the same states, told nobody.
    const quietHistory = await slipway(['alerts', 'history', 'quiet', '--org', org, '--json'], env);
    expect(quietHistory.code, quietHistory.stderr).toBe(0);
    const quietSteps = JSON.parse(quietHistory.stdout) as Array<{ to: string; notified: boolean }>;
    expect(quietSteps.map((t) => t.to)).toEqual(['resolved', 'firing', 'pending']);
    expect(quietSteps.every((t) => !t.notified)).toBe(true);
    expect(receiver.about('quiet')).toEqual([]);
    expect(receiver.about('errors')).toHaveLength(2);

    const listed = await slipway(['alerts', 'list', '--org', org], env);
    expect(listed.stdout).toMatch(/errors\s.*error_rate > 0\.5.*resolved/);
    expect((await slipway(['alerts', 'remove', 'quiet', '--org', org], env)).code).toBe(0);
    expect((await call(h, 'GET', base, alice)).body.map((r: { name: string }) => r.name)).toEqual(['errors']);
  });

  it("count as a regression during a guarded deployment's watch: a firing rule of the environment rolls it back", async () => {
    const app = await deployableApp(h, alice);
    const v1 = await app.release({ 'app.js': FLAKY_APP }, 'web: node app.js\n');
    const first = await call(h, 'POST', `/v1/releases/${v1}/deploy`, alice);
    expect((await settled(h, alice, first.body.deployment_id)).status).toBe('complete');
    // The guard's own thresholds would not catch it (only restarts); the alert rule does.
    const guard = await call(h, 'PUT', `/v1/applications/${app.appId}/guard`, alice, { window_seconds: 120, max_restarts: 1000 });
    expect(guard.status, guard.raw).toBe(200);
    const base = `/v1/organizations/${app.slugs.org}/alert-rules`;
    const rule = { name: 'edge-errors', metric: 'error_rate', threshold: 0.5, window_seconds: 3, min_requests: 5 };
    expect((await call(h, 'POST', base, alice, { ...rule, application_id: app.appId, environment: 'production' })).status).toBe(201);

    const v2 = await app.release({ 'app.js': FLAKY_APP }, 'web: node app.js\n');
    const second = await call(h, 'POST', `/v1/releases/${v2}/deploy`, alice);
    const deploymentId = second.body.deployment_id as string;
    await settled(h, alice, deploymentId);
    const traffic = load(app, () => '/fail');
    try {
      const rolledBack = await waitFor(
        'the guard to roll the deployment back',
        async () => {
          const d = (await call(h, 'GET', `/v1/deployments/${deploymentId}/detail`, alice)).body;
          return d.status === 'rolled_back' ? d : null;
        },
        { timeout: 45_000, every: 200 },
      );
      expect(rolledBack.guard).toMatchObject({ status: 'rolled_back', breach: 'alert rule edge-errors fired during the watch' });
    } finally {
      await traffic.stop();
    }
  });

  it('tell a certificate close to expiry and disk use near the quota once per threshold crossed', async () => {
    const app = await deployableApp(h, alice);
    const org = app.slugs.org;
    const channel = await call(h, 'POST', `/v1/organizations/${org}/notification-channels`, alice, {
      kind: 'slack',
      url: `${receiver.url}/slack/watch`,
      events: ['certificate.expiring', 'quota.near'],
    });
    expect(channel.status, channel.raw).toBe(201);
    // A verified domain whose certificate (its renewal failing) expires in five days and a half.
    const hostname = `shop-${app.appId.slice(-8)}.example.test`;
    await h.ctx.db
      .insertInto('domains')
      .values({
        id: app.appId,
        application_id: app.appId,
        environment_id: app.envId,
        hostname,
        route_hostname: `${app.slugs.app}.example.test`,
        verification_token: 'token',
        verified_at: new Date(),
      })
      .execute();
    await h.ctx.db
      .insertInto('certificates')
      .values({ hostname, certificate_pem: 'pem', private_key_enc: 'sealed', not_after: new Date(Date.now() + 5.5 * 86_400_000) })
      .execute();
    // 900 KiB of build cache measured against a 1 MiB quota: 87%.
    const cache = join(h.ctx.config.dataDir, 'cache', 'apps', app.appId);
    mkdirSync(cache, { recursive: true });
    writeFileSync(join(cache, 'layer'), Buffer.alloc(900 * 1024, 1));
    await h.ctx.db.updateTable('organizations').set({ disk_quota_mb: 1 }).where('slug', '=', org).execute();
    const usage = await call(h, 'GET', `/v1/organizations/${org}/usage`, alice);
    expect(usage.status, usage.raw).toBe(200);

    const about = (text: string) => receiver.messages.filter((m) => m.path === '/slack/watch' && m.body.text.startsWith(text));
    const expiring = await waitFor('certificate.expiring', () => about('Certificate expiring')[0] ?? null, { timeout: 30_000, every: 100 });
    expect(JSON.stringify(expiring.body.blocks)).toContain(`The certificate of ${hostname} expires`);
    expect(JSON.stringify(expiring.body.blocks)).toContain('(5 days left)');
    const quota = await waitFor('quota.near', () => about('Disk quota nearly used')[0] ?? null, { timeout: 30_000, every: 100 });
    expect(JSON.stringify(quota.body.blocks)).toContain(`Organization ${org} uses 8`);

    // Later ticks publish neither again: a rule of the organization shows two more evaluations passed.
    const rules = `/v1/organizations/${org}/alert-rules`;
    expect((await call(h, 'POST', rules, alice, { name: 'clock', metric: 'restarts', threshold: 100 })).status).toBe(201);
    let seen = 0;
    let last = '';
    await waitFor(
      'three evaluations',
      async () => {
        const evaluated = (await call(h, 'GET', `${rules}/clock`, alice)).body.evaluated;
        if (evaluated && evaluated !== last) [seen, last] = [seen + 1, evaluated];
        return seen >= 3 ? true : null;
      },
      { timeout: 30_000, every: 100 },
    );
    expect(about('Certificate expiring')).toHaveLength(1);
    expect(about('Disk quota nearly used')).toHaveLength(1);
  });
});
