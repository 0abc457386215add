/**
 * Issue 30, what a newcomer meets: an environment's first deployment (nothing serving to fall back
 * to) waits only DEPLOY_FIRST_STABILITY_WINDOW_SECONDS once healthy, yet an app that dies inside
 * it still fails with its exit; later deployments get the full DEPLOY_STABILITY_WINDOW_SECONDS,
 * and an application's own stability_window wins over both. Real server, runtime and instances.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { deployableApp, NODE_APP, settled } from './fixtures.js';

let h: Harness;
let alice: TestUser;
beforeAll(async () => {
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 100,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      DEPLOY_STABILITY_WINDOW_SECONDS: 3,
      DEPLOY_FIRST_STABILITY_WINDOW_SECONDS: 2,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
});

async function deploy(releaseId: string) {
  const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
  expect(r.statusCode, r.body).toBe(202);
  const done = await settled(h, alice, r.json().deployment_id, 60_000);
  const detail = await h.app.inject({ method: 'GET', url: `/v1/deployments/${done.id}/detail`, headers: alice.headers });
  return detail.json();
}

/** Answers its health check, then exits 1 a second later. */
const DIES_AFTER_ANSWERING = `
require('http').createServer((q, s) => { s.end('ok'); setTimeout(() => process.exit(1), 1000); })
  .listen(Number(process.env.PORT), '127.0.0.1');
`;

describe('the stability window of a first deployment', () => {
  it('is the short first window when nothing serves, the full one after; a crash inside the short one still fails', async () => {
    const dying = await deployableApp(h, alice, { health_check_path: '/' });
    const failed = await deploy(await dying.release({ 'server.js': DIES_AFTER_ANSWERING }, 'web: node server.js\n'));
    expect(failed.deploy_log).toContain('stability window 2s (first deployment here, nothing to fall back to');
    expect(failed).toMatchObject({ status: 'error', error_code: 'crash_loop' });
    expect(failed.failure).toMatchObject({ reason: 'crashed_in_stability_window', exit: { code: 1 } });

    const app = await deployableApp(h, alice, { health_check_path: '/' });
    const first = await deploy(await app.release({ 'server.js': NODE_APP('v1') }, 'web: node server.js\n'));
    expect(first.status).toBe('complete');
    expect(first.deploy_log).toContain('stability window 2s (first deployment here');
    const second = await deploy(await app.release({ 'server.js': NODE_APP('v2') }, 'web: node server.js\n'));
    expect(second.status).toBe('complete');
    expect(second.deploy_log).toContain('stability window 3s (DEPLOY_STABILITY_WINDOW_SECONDS)');
  }, 120_000);

  it("an application's own stability_window applies to its first deployment too", async () => {
    const app = await deployableApp(h, alice, { health_check_path: '/', stability_window: 1 });
    const first = await deploy(await app.release({ 'server.js': NODE_APP('v1') }, 'web: node server.js\n'));
    expect(first.status).toBe('complete');
    expect(first.deploy_log).toContain("stability window 1s (the application's stability_window)");
  }, 60_000);
});
