// Issue 36's foundation in real headless Chromium against a real server with a deployed app: the
// application's sections (each a sub-route with its own title and focused heading), a rollback
// cancelled at the confirmation and then confirmed, a refused settings form that keeps its edits
// with the error under the field, and screenshots of every section light, dark and at phone width
// (test-artifacts/dashboard-sections, gitignored).
import { axeProblemsLightAndDark } from './a11y.js';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { waitFor } from '../helpers/wait.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`dashboard section tests skipped: ${missing}`);

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard-sections');
const SECTIONS = ['Overview', 'Deployments', 'Logs', 'Configuration', 'Domains', 'Metrics', 'Activity', 'Settings'];

let h: Harness;
let browser: Browser;
let page: Page;
let base: string;
let owner: TestUser;
let app: Deployable;
let appPath: string;
/** A webhook receiver on loopback: the events it was sent. */
let receiver: Server;
const received: string[] = [];

const deployments = async () =>
  (await h.app.inject({ method: 'GET', url: `/v1/applications/${app.appId}/deployments`, headers: owner.headers })).json().items as Array<{
    id: string;
    status: string;
    is_rollback: boolean;
    release: { version: number };
  }>;

async function deploy(version: string) {
  const releaseId = await app.release({ 'server.js': NODE_APP(version) }, 'web: node server.js\n');
  const res = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: owner.headers });
  expect((await settled(h, owner, res.json().deployment_id)).status).toBe('complete');
}

/** axe-core's serious and critical findings on the page as shown, light and dark. */
const accessibilityProblems = () => axeProblemsLightAndDark(page);

/** The section's page in light, dark and at phone width (dark and phone from fresh emulation, no reload of data needed). */
async function screenshots(name: string) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}-light.png`), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: join(ARTIFACTS, `${name}-dark.png`), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 375, height: 800 });
  await page.screenshot({ path: join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

beforeAll(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push(body);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, ROUTER_DRAIN_TIMEOUT_MS: 1000, WEBHOOK_ALLOW_PRIVATE: true },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  owner = await h.user();
  app = await deployableApp(h, owner, { health_check_path: '/' });
  appPath = `/apps/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`;
  await deploy('v1');
  // A guard on production watches v2 after it completes: its decision shows in the history.
  const guard = await h.app.inject({
    method: 'PUT',
    url: `/v1/applications/${app.appId}/guard`,
    headers: owner.headers,
    payload: { max_restarts: 5, window_seconds: 3600 },
  });
  expect(guard.statusCode).toBe(200);
  await deploy('v2');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(base);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
}, 120_000);

afterAll(async () => {
  receiver?.close();
  await browser?.close();
  await h?.close();
});

describe.skipIf(missing !== null)('the application page in Chromium', () => {
  it('answers is it up, what changed, what is failing, and walks every section with its own title and focused heading', async () => {
    await page.goto(base + appPath);
    await page.getByRole('heading', { name: 'Web', level: 1 }).waitFor();
    await page.getByTestId('glance-up').getByText('v2 in production').waitFor();
    expect(await page.getByTestId('glance-failing').textContent()).toContain('Nothing failing');
    expect(await page.getByTestId('glance-changed').textContent()).toMatch(/v2 to production \(deploy\), complete/);
    await page.waitForFunction(() => document.title === 'Web · Slipway');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Web');
    await screenshots('overview');
    expect(await accessibilityProblems()).toEqual([]);

    const nav = page.getByRole('navigation', { name: 'Application sections' });
    for (const label of SECTIONS.slice(1)) {
      await nav.getByRole('link', { name: label }).click();
      await page.waitForFunction((l) => document.title === `${l} · Web · Slipway`, label);
      expect(await nav.getByRole('link', { name: label }).getAttribute('aria-current')).toBe('page');
      // Focus left the clicked link for the page's heading: a screen reader announces the section.
      await page.waitForFunction(() => document.activeElement?.matches('h1, h2'));
      if (label === 'Deployments') {
        const row = page.getByRole('table', { name: 'Deployment history' }).locator('tbody tr').first();
        expect(await row.getByTestId('environment').textContent()).toBe('production');
        expect(await row.getByTestId('trigger').textContent()).toBe('deploy');
        expect(await row.textContent()).toMatch(/v2.*complete.*\d+ s/);
        expect(await row.getByTestId('guard').textContent()).toMatch(/^guard watching until /);
      }
      if (label === 'Logs') {
        // The runtime output the API keeps, secrets scrubbed, with the line's process type.
        await page.getByLabel('Runtime output').getByText('boot v2 secret=**secret**').waitFor();
      }
      if (label === 'Domains') {
        await page.getByLabel('Hostname').fill('shop.example.test');
        await page.getByRole('button', { name: 'Add domain' }).click();
        const domain = page.locator('li[data-domain="shop.example.test"]');
        await domain.getByText('not verified').waitFor();
        expect(await domain.getByTestId('certificate').textContent()).toBe('no certificate yet');
      }
      if (label === 'Activity') {
        // The domain just added is in the audit log, by its author.
        await page.getByRole('table', { name: 'Audit log' }).getByText(owner.username).first().waitFor();
      }
      await screenshots(label.toLowerCase());
      expect(await accessibilityProblems()).toEqual([]);
    }

    // At phone width every deployment row keeps its Log action on screen.
    await nav.getByRole('link', { name: 'Deployments' }).click();
    await page.setViewportSize({ width: 375, height: 800 });
    const log = page.getByRole('button', { name: 'Log of the deployment of v2' });
    const box = await log.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(375);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);

  it('rolls back production only through the confirmation: cancelled changes nothing, confirmed goes v2 → v1', async () => {
    await page.goto(base + appPath);
    await page.getByTestId('serving-release-production').getByText('v2').waitFor();
    const before = (await deployments()).length;

    await page.getByRole('button', { name: 'Roll back' }).click();
    const dialog = page.getByRole('dialog', { name: 'Roll back Web' });
    await dialog.waitFor();
    expect(await dialog.getByText('Environment:').textContent()).toContain('production');
    expect(await dialog.getByLabel('What will change').textContent()).toMatch(/Releasev2 →\s*v1/);
    await screenshots('rollback-confirmation');
    expect(await accessibilityProblems()).toEqual([]);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await deployments()).length).toBe(before);

    // Escape cancels too.
    await page.getByRole('button', { name: 'Roll back' }).click();
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await deployments()).length).toBe(before);

    await page.getByRole('button', { name: 'Roll back' }).click();
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await page.getByRole('status').getByText('Rollback started.').waitFor();
    const rollback = (await deployments())[0]!;
    expect(rollback).toMatchObject({ is_rollback: true, release: { version: 1 } });
    await settled(h, owner, rollback.id);
    await page.getByTestId('serving-release-production').getByText('v1').waitFor({ timeout: 30_000 });
    expect(await page.getByRole('table', { name: 'Recent deployments' }).locator('tbody tr').first().textContent()).toContain('(rollback)');
  }, 60_000);

  it('keeps the settings edits when the server refuses them, the error under its field with the request id', async () => {
    await page.goto(`${base}${appPath}/settings`);
    await page.getByLabel('Auto-deploy branch').fill('release-branch');
    await page.getByLabel('Health check path').fill('health');
    await page.getByRole('button', { name: 'Save settings' }).click();
    const error = page.locator('#health_check_path-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^health_check_path .+ \(request req-\w+\)$/);
    expect(await page.getByLabel('Health check path').getAttribute('aria-invalid')).toBe('true');
    // Nothing was lost, and nothing changed on the server.
    expect(await page.getByLabel('Auto-deploy branch').inputValue()).toBe('release-branch');
    expect(await page.getByLabel('Health check path').inputValue()).toBe('health');
    const stored = await h.ctx.db
      .selectFrom('applications')
      .select('auto_deploy_branch')
      .where('id', '=', app.appId)
      .executeTakeFirstOrThrow();
    expect(stored.auto_deploy_branch).toBeNull();
    await screenshots('settings-refused');

    await page.getByLabel('Health check path').fill('/');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').getByText('Settings saved.').waitFor();
    expect(await error.count()).toBe(0);
  }, 30_000);

  it("creates a webhook on the organization's page and shows its delivery of the next deployment", async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    await page.goto(`${base}/orgs/${app.slugs.org}`);
    await page.getByLabel('Receiver URL').fill(url);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const hook = page.locator(`li[data-webhook="${url}"]`);
    await hook.waitFor();
    const [created] = (
      await h.app.inject({ method: 'GET', url: `/v1/organizations/${app.slugs.org}/webhooks`, headers: owner.headers })
    ).json() as Array<{ id: string }>;

    await deploy('v3');
    await waitFor('the delivery to succeed', async () => {
      const res = await h.app.inject({
        method: 'GET',
        url: `/v1/organizations/${app.slugs.org}/webhooks/${created!.id}/deliveries`,
        headers: owner.headers,
      });
      return (res.json().items as Array<{ event: string; status: string }>).some(
        (d) => d.event === 'deployment.succeeded' && d.status === 'succeeded',
      )
        ? true
        : null;
    });
    expect(received.some((body) => body.includes('deployment.succeeded'))).toBe(true);
    await hook.getByRole('button', { name: 'Deliveries' }).click();
    const delivery = hook.getByRole('table', { name: 'Deliveries' }).locator('tr[data-delivery="deployment.succeeded"]').first();
    await delivery.locator('.status', { hasText: 'succeeded' }).waitFor();
    expect(await delivery.textContent()).toContain('HTTP 200');
    await screenshots('organization-webhooks');
    expect(await accessibilityProblems()).toEqual([]);
  }, 60_000);
});
