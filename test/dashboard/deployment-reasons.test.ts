// Issue 30 in the dashboard: real headless Chromium against a real server (pipeline workers, local
// runtime): a queued deployment says why and behind what (the API's queue_reason), and a failed one
// shows its structured failure (exit status, hint, last lines of output) under its row.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled } from '../pipeline-deploy/fixtures.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`dashboard deployment tests skipped: ${missing}`);

let h: Harness;
let browser: Browser;
let page: Page;
let base: string;
let owner: TestUser;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_RESTART_BACKOFF_MS: 100,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
    },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  owner = await h.user();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const api = async (method: 'GET' | 'POST', url: string) => (await h.app.inject({ method, url, headers: owner.headers })).json();
const deploy = async (releaseId: string): Promise<string> => (await api('POST', `/v1/releases/${releaseId}/deploy`)).deployment_id;

describe.skipIf(missing !== null)('deployments in the dashboard', () => {
  it('a queued deployment says what it waits for; a crashed one shows its exit, hint and last lines', async () => {
    // Timeouts far beyond the test's: only the crash ends the first deployment, and the second holds its job.
    const app = await deployableApp(h, owner, { health_check_path: '/', health_check_timeout: 600, deployment_timeout: 600 });
    const crashed = await deploy(
      await app.release({ 'server.js': "console.log('starting the shop');\nrequire('express');\n" }, 'web: node server.js\n'),
    );
    expect((await settled(h, owner, crashed)).failure).toMatchObject({ reason: 'crashed_during_start' });

    const hanging = await deploy(
      await app.release(
        { 'server.js': "require('http').createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');\n" },
        'web: node server.js\n',
      ),
    );
    await waitFor('the hanging deployment to start', async () =>
      (await api('GET', `/v1/deployments/${hanging}/detail`)).started ? true : null,
    );
    const queued = await deploy(await app.release({ 'server.js': NODE_APP('v3') }, 'web: node server.js\n'));
    const reason = `waiting for deployment ${hanging} of app ${app.slugs.app}`;
    expect((await api('GET', `/v1/deployments/${queued}/detail`)).queue_reason).toBe(reason);

    await page.goto(base);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.goto(`${base}/apps/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`);

    const queuedRow = page.locator(`tr[data-deployment="${queued}"]`);
    await queuedRow.waitFor();
    expect(await queuedRow.locator('.status').textContent()).toBe('queued');
    expect(await queuedRow.locator('.queue-reason').textContent()).toBe(reason);

    const failure = page.getByLabel('Why deployment of v1 failed');
    await failure.waitFor();
    const text = (await failure.textContent()) ?? '';
    expect(text).toContain('web.1 crashed during start (exit code 1)');
    expect(text).toMatch(/Hint.*a dependency is missing \(express\)/);
    expect(await failure.locator('.failure-output').textContent()).toContain("Cannot find module 'express'");

    // Cancelling the hanging one lets the queued one run; the dashboard follows (no reason left).
    await api('POST', `/v1/deployments/${hanging}/cancel`);
    expect((await settled(h, owner, queued)).status).toBe('complete');
    await queuedRow.locator('.status', { hasText: 'complete' }).waitFor();
    expect(await queuedRow.locator('.queue-reason').count()).toBe(0);
  }, 120_000);
});
