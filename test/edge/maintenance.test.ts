import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { waitFor } from '../helpers/wait.js';

/** A GET through the edge with this Host header: status, headers and body. */
function edgeGet(port: number, host: string) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

describe('maintenance mode per environment: the edge answers a 503 page while the instances keep running', () => {
  let h: Harness;
  let alice: TestUser;
  let mallory: TestUser;
  let app: Deployable;
  let host: string;
  let home: string;
  let cliEnv: Record<string, string>;
  /** A webhook receiver on loopback (WEBHOOK_ALLOW_PRIVATE in this harness): the events it got. */
  const received: Array<{ event: string; data: Record<string, unknown> }> = [];
  let receiver: Server;
  const port = () => localRuntime(h.ctx).router.port;
  const url = () => `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production/maintenance`;
  const put = (user: TestUser, payload: object) => h.app.inject({ method: 'PUT', url: url(), headers: user.headers, payload });

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('thanks');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 5000, WEBHOOK_ALLOW_PRIVATE: true },
      { jobs: true, runtime: true },
    );
    alice = await h.user();
    mallory = await h.user();
    app = await deployableApp(h, alice);
    host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
    const r = await h.app.inject({
      method: 'POST',
      url: `/v1/releases/${await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n')}/deploy`,
      headers: alice.headers,
    });
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
    const hook = await h.app.inject({
      method: 'POST',
      url: `/v1/organizations/${app.slugs.org}/webhooks`,
      headers: alice.headers,
      payload: {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
        events: ['maintenance.enabled', 'maintenance.disabled'],
      },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    home = mkdtempSync(join(tmpdir(), 'slipway-maint-'));
    const address = h.app.server.address() as { port: number };
    cliEnv = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: `http://127.0.0.1:${address.port}`,
      SLIPWAY_API_KEY: alice.apiKey,
      SLIPWAY_APP: `${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`,
    };
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await new Promise((r) => receiver?.close(r));
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('turns on: 503 with Retry-After and the escaped message, the instance still running; off serves the app again', async () => {
    expect((await edgeGet(port(), host)).body).toBe('v1:hello');
    const on = await put(alice, { enabled: true, message: 'Back at <b>noon</b> & later', retry_after: 120 });
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toMatchObject({ environment: 'production', enabled: true, retry_after: 120, enabled_by: alice.username });

    const page = await edgeGet(port(), host);
    expect(page.status).toBe(503);
    expect(page.headers['retry-after']).toBe('120');
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('Back at &lt;b&gt;noon&lt;/b&gt; &amp; later');
    expect(page.body).not.toContain('<b>noon');
    const running = await h.ctx.db
      .selectFrom('instances')
      .select('id')
      .where('application_id', '=', app.appId)
      .where('state', 'in', ['healthy', 'running'])
      .execute();
    expect(running.length).toBeGreaterThan(0);

    // Without a message: the default page names the application.
    expect((await put(alice, { enabled: true })).statusCode).toBe(200);
    const plain = await edgeGet(port(), host);
    expect(plain.status).toBe(503);
    expect(plain.headers['retry-after']).toBe('300');
    expect(plain.body).toContain('Web is down for maintenance');

    const off = await put(alice, { enabled: false });
    expect(off.json()).toMatchObject({ enabled: false, retry_after: null });
    expect(await edgeGet(port(), host)).toMatchObject({ status: 200, body: 'v1:hello' });

    const events = await waitFor('the maintenance webhooks', () => {
      const names = received.map((e) => e.event);
      return names.filter((n) => n === 'maintenance.enabled').length === 2 && names.includes('maintenance.disabled') ? names : null;
    });
    expect(events.sort()).toEqual(['maintenance.disabled', 'maintenance.enabled', 'maintenance.enabled']);
    expect(received[0]!.data).toMatchObject({ environment: 'production', by: alice.id });
  });

  it('records who toggled it in the audit log', async () => {
    const r = await h.app.inject({ method: 'GET', url: `/v1/organizations/${app.slugs.org}/audit-log`, headers: alice.headers });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    const entries = (Array.isArray(body) ? body : body.items) as Array<{ action: string; actor: { username: string } }>;
    const toggles = entries.filter((e) => e.action.endsWith('/maintenance'));
    expect(toggles.length).toBe(3);
    expect(toggles.every((e) => e.action.startsWith('PUT ') && e.actor.username === alice.username)).toBe(true);
  });

  it('refuses bad input and a member of another organization, changing nothing', async () => {
    expect((await put(alice, { enabled: true, message: 'x'.repeat(2001) })).statusCode).toBe(422);
    expect((await put(alice, { enabled: true, retry_after: 0 })).statusCode).toBe(422);
    expect([403, 404]).toContain((await put(mallory, { enabled: true })).statusCode);
    expect([403, 404]).toContain((await h.app.inject({ method: 'GET', url: url(), headers: mallory.headers })).statusCode);
    expect((await edgeGet(port(), host)).status).toBe(200);
  });

  it('on a protected environment, only organization admins toggle it', async () => {
    const bob = await h.user();
    const added = await h.app.inject({
      method: 'POST',
      url: `/v1/workspaces/${app.slugs.org}/members`,
      headers: alice.headers,
      payload: { username: bob.username },
    });
    expect(added.statusCode, added.body).toBeLessThan(300);
    const env = `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production`;
    expect((await put(bob, { enabled: false })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'PATCH', url: env, headers: alice.headers, payload: { protected: true } })).statusCode).toBe(200);
    const refused = await put(bob, { enabled: true });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toContain('protected');
    expect((await edgeGet(port(), host)).status).toBe(200);
    expect((await h.app.inject({ method: 'PATCH', url: env, headers: alice.headers, payload: { protected: false } })).statusCode).toBe(200);
  });

  it('is toggled by the CLI as a child process', async () => {
    const on = await slipway(['maintenance', 'on', '--message', 'Upgrading the database', '--retry-after', '60'], cliEnv);
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toContain('Maintenance is on in production');
    const page = await edgeGet(port(), host);
    expect(page.status).toBe(503);
    expect(page.headers['retry-after']).toBe('60');
    expect(page.body).toContain('Upgrading the database');

    const shown = await slipway(['maintenance', '--json'], cliEnv);
    expect(JSON.parse(shown.stdout)).toMatchObject({ enabled: true, message: 'Upgrading the database', retry_after: 60 });

    const off = await slipway(['maintenance', 'off'], cliEnv);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('Maintenance is off in production');
    expect((await edgeGet(port(), host)).status).toBe(200);

    const bad = await slipway(['maintenance', 'sideways'], cliEnv);
    expect(bad.code).toBe(2);
  });
});
