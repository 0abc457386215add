/**
 * Issue 30: "a WebSocket app's old instance drains for 30 s silently". While the previous
 * release's instance still has connections open at the edge, the deployment's log says so
 * ("web.1 (v1) draining: 1 open connection, up to N s left"), and says when it has drained.
 * Real server, runtime, instances and built-in edge; the open connection is a real request
 * through the edge that the app never finishes, closed by the test once the log shows it.
 */
import { request, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, settled } from './fixtures.js';

/** `/hold` answers its headers and never ends (a long poll, an event stream); the rest answers at once. */
const HOLDING_APP = (version: string) => `
require('http').createServer((req, res) => {
  if (req.url === '/hold') { res.writeHead(200, { 'content-type': 'text/plain' }); res.write('holding ${version}\\n'); return; }
  res.end('${version}');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let h: Harness;
let alice: TestUser;
beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 60_000,
      DEPLOY_STABILITY_WINDOW_SECONDS: 0,
      DEPLOY_FIRST_STABILITY_WINDOW_SECONDS: 0,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
});

const detail = async (id: string) =>
  (await h.app.inject({ method: 'GET', url: `/v1/deployments/${id}/detail`, headers: alice.headers })).json();
const deploy = async (releaseId: string) => {
  const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
  expect(r.statusCode, r.body).toBe(202);
  return r.json().deployment_id as string;
};

describe('draining the previous release', () => {
  it("shows the old instance's open connections in the deployment log while it drains, then that it drained", async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/' });
    const first = await settled(h, alice, await deploy(await app.release({ 'server.js': HOLDING_APP('v1') }, 'web: node server.js\n')));
    expect(first.complete, JSON.stringify(first)).toBe(true);
    const host = new URL((await detail(first.id)).deploy_metadata.url).hostname;

    // One connection held open to v1 through the edge.
    let held: ClientRequest | undefined;
    const firstBytes = await new Promise<string>((resolve, reject) => {
      held = request({ host: '127.0.0.1', port: localRuntime(h.ctx).router.port, path: '/hold', headers: { host } }, (res) =>
        res.once('data', (chunk: Buffer) => resolve(chunk.toString())),
      );
      held.on('error', reject);
      held.end();
    });
    expect(firstBytes).toBe('holding v1\n');

    const second = await deploy(await app.release({ 'server.js': HOLDING_APP('v2') }, 'web: node server.js\n'));
    const draining = await waitFor(
      'the drain line in the deployment log',
      async () => ((await detail(second)).deploy_log as string).match(/web\.1 \(v1\) draining: 1 open connection, up to \d+ s left/)?.[0],
      30_000,
      200,
    );
    expect(draining).toBeTruthy();
    held!.on('error', () => {}).destroy();

    const done = await settled(h, alice, second, 30_000);
    expect(done.complete, JSON.stringify(done)).toBe(true);
    const log = (await detail(second)).deploy_log as string;
    expect(log).toMatch(/Rollout: web\.1 \(v1\) drained/);
    expect(log).not.toMatch(/still had/);
  }, 90_000);
});
