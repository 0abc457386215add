/**
 * Issue 30, "a broken app says what happened": against a real server (listening, real
 * PostgreSQL, pipeline and sandboxed instances), through the HTTP API and the `slipway` CLI as a
 * child process: a crash during start fails the deployment within seconds with the exit status,
 * the last lines and a hint; an app on the wrong port fails at its own health-check timeout
 * saying what the check got, on which port, and where it listens instead; a crash 3 s after
 * becoming healthy fails inside the stability window while the previous release keeps serving;
 * a crash after the window shows in status, ps, the log stream and the events.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slipway } from '../cli/slipway.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp } from '../pipeline-build/fixtures.js';
import { deployableApp, NODE_APP, settled, type Deployable } from './fixtures.js';

let h: Harness;
let alice: TestUser;
let server: string;
let home: string;
const repos: TestRepo[] = [];
/** A webhook receiver on loopback (WEBHOOK_ALLOW_PRIVATE in this harness): the events it got. */
const received: Array<{ event: string; data: Record<string, unknown> }> = [];
let receiver: Server;

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
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 200,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      PIPELINE_CONCURRENCY: 4,
      WEBHOOK_ALLOW_PRIVATE: true,
    },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  server = `http://127.0.0.1:${address.port}`;
  home = mkdtempSync(join(tmpdir(), 'slipway-diag-home-'));
  alice = await h.user();
});

afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
  if (home) rmSync(home, { recursive: true, force: true });
  await new Promise((r) => receiver?.close(r));
});

const cli = (user: TestUser, args: string[]) =>
  slipway(args, {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    SLIPWAY_SERVER: server,
    SLIPWAY_API_KEY: user.apiKey,
    NO_COLOR: '1',
  });
const appPath = (d: Deployable) => `${d.slugs.org}/${d.slugs.project}/${d.slugs.app}`;
const hostOf = (d: Deployable) => `${d.slugs.app}.${d.slugs.project}.${d.slugs.org}.localhost`;
const routerPort = () => localRuntime(h.ctx).router.port;
const api = async (method: 'GET' | 'PATCH' | 'POST', url: string, payload?: object) => {
  const r = await h.app.inject({ method, url, headers: alice.headers, ...(payload ? { payload } : {}) });
  expect(r.statusCode, r.body).toBeLessThan(300);
  return r.json();
};
const deploy = async (releaseId: string) => (await api('POST', `/v1/releases/${releaseId}/deploy`)).deployment_id as string;

describe('a broken app says what happened', () => {
  it('`slipway deploy --wait` reports a crash during start within seconds: exit code, its last lines, a hint', async () => {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({
      'server.js': "console.log('starting the shop');\nrequire('express');\n",
      Procfile: 'web: node server.js\n',
      'slipway.json': JSON.stringify({ build: 'true' }),
    });
    // Timeouts far beyond the test's own: only the crash can end the deployment this soon.
    const t = await createApp(h, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      deployment_timeout: 600,
      health_check_timeout: 600,
    });
    const r = await cli(t.user, ['deploy', '--wait', '--app', `${t.orgSlug}/shop/web`]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain('web.1 | starting the shop');
    expect(r.stdout).toContain("Cannot find module 'express'");
    expect(r.stdout).toContain('==> Why it failed');
    expect(r.stdout).toContain('exit:         exit code 1');
    expect(r.stdout).toMatch(/hint: a dependency is missing \(express\)/);
    expect(r.stderr).toMatch(
      /Deploy failed: .*web\.1 exited \(exit code 1\) during start.*; its output: Error: Cannot find module 'express'\. Hint: a dependency is missing \(express\)/,
    );

    const list = (await h.app.inject({ method: 'GET', url: `/v1/applications/${t.appId}/deployments`, headers: t.user.headers })).json();
    const d = list.items[0];
    expect(d).toMatchObject({ status: 'error', error_code: 'crash_loop' });
    expect(d.failure).toMatchObject({
      reason: 'crashed_during_start',
      instance: 'web.1',
      exit: { code: 1, signal: null, description: 'exit code 1' },
      health_check: { path: '/', status: null },
    });
    // Its last 20 lines: node's report of the missing module (the first line scrolled out of them).
    expect(d.failure.output).toHaveLength(20);
    expect(d.failure.output).toContain("Error: Cannot find module 'express'");
    // Reported within seconds of the crash (the app crashes as it starts), not at its 600 s timeout.
    expect(Date.parse(d.finished) - Date.parse(d.started)).toBeLessThan(15_000);
  });

  it('an app on the wrong port fails at its own health-check timeout: what the check got, on which port, where it listens', async () => {
    const app = await deployableApp(h, alice, { health_check_timeout: 2, deployment_timeout: 120, health_check_path: '/health' });
    const wrongPort = NODE_APP('v1').replace('Number(process.env.PORT)', 'Number(process.env.PORT) + 1');
    const d = await settled(h, alice, await deploy(await app.release({ 'app.js': wrongPort }, 'web: node app.js\n')));
    expect(d).toMatchObject({ error: true, error_code: 'health_check_failed' });
    const f = d.failure;
    expect(f).toMatchObject({ reason: 'health_check_timeout', instance: 'web.1', exit: null, listening_ports: [f.port + 1] });
    expect(f.health_check).toMatchObject({ path: '/health', port: f.port, status: null });
    // Sandboxed, its network helper takes the connection and closes it; unsandboxed, the kernel refuses it.
    expect(f.health_check.result).toMatch(/^(connection refused|connection closed without an answer)/);
    expect(f.hint).toBe(
      `it listens on port ${f.port + 1}, not on ${f.port} (the PORT variable): make it listen on process.env.PORT / $PORT`,
    );
    expect(d.error_detail).toContain(`web.1 did not answer 2xx on /health at port ${f.port} within 2s`);
    expect(d.error_detail).toContain(`it listens on port ${f.port + 1} instead`);

    const shown = await cli(alice, ['deployments', 'show', d.id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('web.1 never answered its health check');
    expect(shown.stdout).toContain(`health check: GET /health on port ${f.port}: ${f.health_check.result}`);
    expect(shown.stdout).toContain(`listening on: port ${f.port + 1} (PORT is ${f.port};`);
    expect(shown.stdout).toContain('| boot v1 secret=**secret**');
  });

  it('an app answering its health check with an error status fails with that status', async () => {
    const app = await deployableApp(h, alice, { health_check_timeout: 2, health_check_path: '/health' });
    const notFound = `require('http').createServer((q, s) => { s.statusCode = 404; s.end(); }).listen(Number(process.env.PORT), '127.0.0.1');`;
    const d = await settled(h, alice, await deploy(await app.release({ 'app.js': notFound }, 'web: node app.js\n')));
    expect(d.failure.health_check).toMatchObject({ result: 'HTTP 404', status: 404 });
    expect(d.failure.listening_ports).toEqual([d.failure.port]);
    expect(d.failure.hint).toMatch(/^it answers \/health with HTTP 404/);
  });

  it('a crash 3 s after becoming healthy fails inside the stability window; the previous release keeps serving', async () => {
    const app = await deployableApp(h, alice, { stability_window: 0 });
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    expect((await settled(h, alice, await deploy(v1))).complete).toBe(true);
    await api('PATCH', `/v1/applications/${app.appId}/settings`, { stability_window: 8 });

    const crashesLater = `${NODE_APP('v2')}\nsetTimeout(() => { console.log('giving up'); process.exit(4); }, 3000);\n`;
    const v2 = await app.release({ 'app.js': crashesLater }, 'web: node app.js\n');
    const id = await deploy(v2);
    // Healthy and watched: the edge still routes to v1.
    await waitFor('the stability window', async () =>
      (await api('GET', `/v1/deployments/${id}/detail`)).deploy_log.includes('stability window'),
    );
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
    const d = await settled(h, alice, id);
    expect(d).toMatchObject({ error: true, error_code: 'crash_loop' });
    expect(d.failure).toMatchObject({ reason: 'crashed_in_stability_window', instance: 'web.1', exit: { code: 4 } });
    expect(d.failure.seconds_after_healthy).toBeGreaterThanOrEqual(2);
    expect(d.failure.output).toEqual(['boot v2 secret=**secret**', 'giving up']);
    expect(d.error_detail).toMatch(
      /^web\.1 exited \(exit code 4\) [\d.]+s after it answered healthy, inside the stability window; the previous release keeps serving/,
    );
    expect(d.deploy_log).toContain('the previous release serves until then');
    expect((await routerGet(routerPort(), hostOf(app))).body).toBe('v1:hello');
    const rows = await h.ctx.db.selectFrom('instances').select('release_id').where('application_id', '=', app.appId).execute();
    expect(rows).toEqual([{ release_id: v1 }]);
  });

  it('a crash after the window shows in status, ps, the log stream and the events', async () => {
    const app = await deployableApp(h, alice, { stability_window: 1 });
    const v1 = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const d = await settled(h, alice, await deploy(v1));
    expect(d.complete).toBe(true);
    expect(d.deploy_log).toContain('watching the new instances for 1s (stability window)');
    expect(d.deploy_log).toContain('web.1 | boot v1 secret=**secret**');
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/crashes`;
    await api('POST', `/v1/organizations/${app.slugs.org}/webhooks`, { url: hookUrl, events: ['instance.crashed'] });

    await routerGet(routerPort(), hostOf(app), '/crash');
    await waitFor('a restart after the crash', async () => {
      const [i] = await api('GET', `/v1/applications/${app.appId}/instances`);
      return i?.restarts >= 1 && i.state === 'healthy';
    });

    const status = await api('GET', `/v1/applications/${app.appId}/pipeline-status`);
    expect(status.instances).toMatchObject({ environment: 'production', total: 1, running: 1, restarts: 1 });
    expect(status.instances.crashing).toEqual([
      { name: 'web.1', state: 'healthy', restarts: 1, last_exit: 'exit code 3', last_exit_at: expect.any(String) },
    ]);

    const ps = await cli(alice, ['ps', '--app', appPath(app)]);
    expect(ps.code, ps.stderr).toBe(0);
    expect(ps.stdout).toMatch(/NAME\s+STATE\s+RESTARTS\s+LAST EXIT/);
    expect(ps.stdout).toMatch(/web\.1\s+healthy\s+1\s+exit code 3\s+v1/);
    const st = await cli(alice, ['status', '--app', appPath(app)]);
    expect(st.stdout, st.stderr).toContain('web.1 restarted 1 time(s), last exit code 3');

    const logs = await waitFor('the platform line in the log stream', async () => {
      const page = await api('GET', `/v1/applications/${app.appId}/logs?search=exited`);
      return page.items.length > 0 ? page.items : null;
    });
    expect(logs[0]).toMatchObject({
      process_type: 'web',
      stream: 'stderr',
      line: '[slipway] web.1 exited with code 3, restarting in 200ms',
    });

    const events = await eventsUntil(app.appId, 'instance.crashed');
    expect(events).toContain('"last_exit":"exit code 3"');
    expect(events).toContain('"instance":"web.1"');
    const hook = await waitFor('the instance.crashed webhook', () => received.find((e) => e.event === 'instance.crashed'));
    expect(hook.data).toMatchObject({ application_id: app.appId, instance: 'web.1', last_exit: 'exit code 3', restart_count: 0 });
  });
});

/** The application's stored events (SSE from the start) until one of `kind` arrived. */
async function eventsUntil(applicationId: string, kind: string): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(`${server}/v1/applications/${applicationId}/events`, {
    headers: { 'x-api-key': alice.apiKey, 'last-event-id': '0' },
    signal: abort.signal,
  });
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    if (text.includes(`event: ${kind}`) && /\n\n$/.test(text)) break;
  }
  abort.abort();
  return text;
}
