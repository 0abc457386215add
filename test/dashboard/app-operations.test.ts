// Issue 36's remaining application sections in real headless Chromium against a real server with
// a deployed app: every section (the new ones too) walked with axe-core in light and in dark at
// phone width and every action reached by keyboard; a one-off run with its output and exit
// status; cron jobs (a refused schedule keeps its edits), autoscaling, a volume, maintenance
// through the confirmation on a protected environment, a pull request's preview deleted through
// the confirmation, the effective configuration with its scopes, request sparklines, and renaming
// and deleting the application (its slug typed out). Screenshots in
// test-artifacts/dashboard-operations (gitignored).
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { signBody } from '../../src/modules/github/signature.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { axeProblems, unreachableByKeyboard } from './a11y.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`dashboard operations tests skipped: ${missing}`);

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard-operations');
const SECTIONS = [
  'Overview',
  'Deployments',
  'Logs',
  'Configuration',
  'Effective config',
  'Runs',
  'Cron',
  'Autoscaling',
  'Environments',
  'Previews',
  'Domains',
  'Add-ons & volumes',
  'Metrics',
  'Activity',
  'Settings',
];
const SHOWN_ELSEWHERE = new Set(['Deployments', 'Logs', 'Configuration', 'Domains', 'Metrics', 'Activity']);
const HOOK_SECRET = 'dashboard-operations-hook';
const PHONE = { width: 375, height: 800 };
const DESKTOP = { width: 1280, height: 900 };

let h: Harness;
let browser: Browser;
let page: Page;
let base: string;
let owner: TestUser;
let app: Deployable;
let appPath: string;
let host: string;

const api = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
  const res = await h.app.inject({ method, url, headers: owner.headers, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : undefined };
};

beforeAll(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      REQUEST_STATS_FLUSH_MS: 200,
      GITHUB_WEBHOOK_SECRET: HOOK_SECRET,
    },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  owner = await h.user();
  app = await deployableApp(h, owner, { health_check_path: '/' });
  appPath = `/apps/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`;
  const releaseId = await app.release({ 'server.js': NODE_APP('v1') }, 'web: node server.js\n');
  const deployed = await settled(h, owner, (await api('POST', `/v1/releases/${releaseId}/deploy`)).body.deployment_id);
  expect(deployed.status).toBe('complete');
  host = new URL(deployed.deploy_metadata.url).host;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: DESKTOP })).newPage();
  await page.goto(base);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Organizations' }).waitFor();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const section = (label: string) => `${base}${appPath}/${label}`;
const dialogNamed = (name: string) => page.getByRole('dialog', { name });

describe.skipIf(missing !== null)('the application page operations in Chromium', () => {
  it('runs a command once: its output live and its exit status, and shows the exec line for a terminal', async () => {
    await page.goto(section('runs'));
    await page.getByLabel('The exec command').getByText(`slipway exec --app ${app.slugs.org}/${app.slugs.project}/web`).waitFor();
    await page.getByLabel('Command', { exact: true }).fill('echo output-of-the-run; exit 3');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const output = page.getByRole('region', { name: 'Output of echo output-of-the-run; exit 3' });
    await output.locator('.log-lines').getByText('output-of-the-run').waitFor({ timeout: 30_000 });
    await output.locator('.log-state[data-state="failed"]').waitFor({ timeout: 30_000 });
    expect(await output.locator('.log-state').textContent()).toBe('finished: failed, exit 3');
    const row = page.getByRole('table', { name: 'Runs' }).locator('tbody tr').first();
    await row.getByTestId('run-outcome').getByText('failed, exit 3').waitFor();
    const [run] = (await api('GET', `/v1/applications/${app.appId}/runs`)).body.items;
    expect(run).toMatchObject({ command: 'echo output-of-the-run; exit 3', status: 'failed', exit_code: 3 });
  }, 60_000);

  it('adds, edits and removes a cron job: a refused schedule keeps the edits with the error under the field', async () => {
    await page.goto(section('cron'));
    await page.getByText('No cron jobs').waitFor();
    await page.getByLabel('Name').fill('nightly');
    await page.getByLabel('Schedule (cron, UTC)').fill('every night');
    await page.getByLabel('Command', { exact: true }).fill('echo nightly');
    await page.getByRole('button', { name: 'Add cron job' }).click();
    const error = page.locator('#schedule-error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/\(request req-\w+\)$/);
    expect(await page.getByLabel('Command').inputValue()).toBe('echo nightly');
    expect((await api('GET', `/v1/applications/${app.appId}/cron`)).body).toEqual([]);

    await page.getByLabel('Schedule (cron, UTC)').fill('0 3 * * *');
    await page.getByRole('button', { name: 'Add cron job' }).click();
    const row = page.locator('tr[data-cron="nightly"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('0 3 * * *');
    expect(await row.textContent()).toMatch(/next \d/);

    await row.getByRole('button', { name: 'Edit nightly' }).click();
    await page.getByLabel('Schedule (cron, UTC)').fill('@hourly');
    await page.getByRole('button', { name: 'Save cron job' }).click();
    await row.getByText('@hourly').waitFor();
    expect((await api('GET', `/v1/applications/${app.appId}/cron`)).body).toMatchObject([{ name: 'nightly', schedule: '@hourly' }]);

    await row.getByRole('button', { name: 'Last runs of nightly' }).click();
    await page.getByText('It has not run yet').waitFor();

    await row.getByRole('button', { name: 'Remove nightly' }).click();
    const dialog = dialogNamed('Remove the cron job nightly');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await api('GET', `/v1/applications/${app.appId}/cron`)).body).toHaveLength(1);
    await row.getByRole('button', { name: 'Remove nightly' }).click();
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await page.getByText('No cron jobs').waitFor();
    expect((await api('GET', `/v1/applications/${app.appId}/cron`)).body).toEqual([]);
  }, 60_000);

  it('sets an autoscaling policy and stops it through the confirmation', async () => {
    await page.goto(section('autoscaling'));
    await page.getByText('No process type autoscales').waitFor();
    await page.getByLabel('Maximum instances').fill('3');
    await page.getByLabel('Target value').fill('70');
    await page.getByRole('button', { name: 'Save policy' }).click();
    const set = dialogNamed('Autoscale web');
    expect(await set.getByLabel('What will change').textContent()).toMatch(/web instancesa fixed count →\s*1–3, CPU 70%/);
    await set.getByRole('button', { name: 'Save policy' }).click();
    const row = page.locator('tr[data-policy="web"]');
    await row.waitFor();
    expect(await row.textContent()).toMatch(/web production1–3, CPU 70%/);
    await page.getByText('The autoscaler has changed nothing yet.').waitFor();

    await row.getByRole('button', { name: 'Stop autoscaling web' }).click();
    const dialog = dialogNamed('Stop autoscaling web');
    expect(await dialog.getByLabel('What will change').textContent()).toMatch(/1–3, CPU 70% →\s*off/);
    await dialog.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('No process type autoscales').waitFor();
    expect((await api('GET', `/v1/applications/${app.appId}/autoscaling`)).body).toEqual([]);
  }, 30_000);

  it('creates a volume and deletes it and its data only through the confirmation', async () => {
    await page.goto(section('resources'));
    await page.getByText('No add-on is attached to Web.').waitFor();
    await page.getByLabel('Volume name').fill('uploads');
    await page.getByLabel('Mount path').fill('/data');
    await page.getByLabel('Size (MiB)').fill('16');
    await page.getByRole('button', { name: 'Create volume' }).click();
    const create = dialogNamed('Create a volume');
    expect(await create.getByLabel('What will change').textContent()).toMatch(/uploads: 16 MiB at \/data.*stop-then-start/);
    await create.getByRole('button', { name: 'Create volume' }).click();
    const row = page.locator('li[data-volume="uploads"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('at /data (web)');
    const mounting = (await api('GET', `/v1/applications/${app.appId}/deployments`)).body.items[0];
    expect((await settled(h, owner, mounting.id, 60_000)).status).toBe('complete');

    await row.getByRole('button', { name: 'Delete the volume uploads' }).click();
    const dialog = dialogNamed('Delete the volume uploads');
    expect(await dialog.getByLabel('What will change').textContent()).toMatch(/16 MiB at \/data →\s*deleted for good/);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await api('GET', `/v1/applications/${app.appId}/volumes`)).body).toHaveLength(1);
    await row.getByRole('button', { name: 'Delete the volume uploads' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No volumes:').waitFor();
    expect((await api('GET', `/v1/applications/${app.appId}/volumes`)).body).toEqual([]);
    const unmounting = (await api('GET', `/v1/applications/${app.appId}/deployments`)).body.items[0];
    expect((await settled(h, owner, unmounting.id, 60_000)).status).toBe('complete');
  }, 120_000);

  it('says a protected environment is protected and who may act, and puts it in maintenance only after the confirmation', async () => {
    const envUrl = `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production`;
    expect((await api('PATCH', envUrl, { protected: true })).status).toBe(200);
    await page.goto(section('environments'));
    await page.getByTestId('protected-production').waitFor();
    expect(await page.getByTestId('who-production').textContent()).toBe('Who may act: organization admins only (no member is granted it).');
    expect(await page.getByTestId('guard-production').textContent()).toMatch(/^Guard: none/);
    // The overview marks it too, and its production actions say who may take them.
    await page.goto(base + appPath);
    await page.getByTestId('protected-production').waitFor();
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    expect(await dialogNamed('Deploy Web').textContent()).toContain('production is protected: only organization admins');
    await dialogNamed('Deploy Web').getByRole('button', { name: 'Cancel' }).click();
    await page.goto(section('environments'));

    await page.getByLabel('Maintenance message for production (optional)').fill('Back at noon');
    await page.getByRole('button', { name: 'Start maintenance of production' }).click();
    const dialog = dialogNamed('Start maintenance of production');
    expect(await dialog.getByText('Environment:').textContent()).toContain('production');
    expect(await dialog.getByLabel('What will change').textContent()).toMatch(/served by the application →\s*a 503 maintenance page/);
    expect(await dialog.textContent()).toContain('production is protected');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await api('GET', `${envUrl}/maintenance`)).body.enabled).toBe(false);

    await page.getByRole('button', { name: 'Start maintenance of production' }).click();
    await dialog.getByRole('button', { name: 'Start maintenance' }).click();
    await page.getByTestId('maintenance-production').getByText('Back at noon').waitFor();
    const port = localRuntime(h.ctx).router.port;
    await waitFor('the maintenance page', async () => (await routerGet(port, host)).status === 503);

    await page.getByRole('button', { name: 'End maintenance of production' }).click();
    await dialogNamed('End maintenance of production').getByRole('button', { name: 'End maintenance' }).click();
    await page.getByTestId('maintenance-production').locator('.status-ok').waitFor();
    await waitFor('the application again', async () => (await routerGet(port, host)).body === 'v1:hello');
    expect((await api('PATCH', envUrl, { protected: false })).status).toBe(200);
  }, 60_000);

  it("lists a pull request's preview with its state and URL, and deletes it only through the confirmation", async () => {
    const repo = new TestRepo('slipway-dash-preview-');
    try {
      const sha = repo.commit({ 'server.js': NODE_APP('pr'), Procfile: 'web: node server.js\n' }, 'pr');
      expect((await api('PATCH', `/v1/applications/${app.appId}/settings`, { github_repository: repo.dir })).status).toBe(200);
      const previews = `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/previews`;
      expect((await api('PUT', previews, { template_environment: 'production' })).status).toBe(200);
      // A signed pull_request hook, as GitHub sends it, opens the preview.
      const body = Buffer.from(
        JSON.stringify({
          action: 'opened',
          number: 7,
          pull_request: { number: 7, head: { sha, ref: 'feature-7', repo: { full_name: 'acme/dash-web' } } },
          repository: { full_name: 'acme/dash-web', clone_url: repo.dir },
        }),
      );
      const hook = await h.app.inject({
        method: 'POST',
        url: '/v1/integrations/github/hooks',
        payload: body,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'pull_request',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': signBody(HOOK_SECRET, body),
        },
      });
      expect(hook.statusCode, hook.body).toBe(200);

      await page.goto(section('previews'));
      await page.getByTestId('preview-settings').getByText('Previews are on').waitFor();
      const preview = page.locator('li[data-preview="pr-7"]');
      await preview.waitFor();
      expect(await preview.textContent()).toContain('same repository');
      // Its state for this application comes from its newest deployment there (the build may still run).
      expect(await preview.getByTestId('preview-state').textContent()).toMatch(
        /^(building, not deployed yet|deploying v\d+|serving v\d+|deployment failed \(v\d+\))$/,
      );
      expect(await preview.getByRole('link').getAttribute('href')).toMatch(/^http:\/\/web\.pr-7\./);

      await page.screenshot({ path: join(ARTIFACTS, 'previews-with-one-light.png'), fullPage: true });
      expect(await axeProblems(page)).toEqual([]);
      await preview.getByRole('button', { name: 'Delete the preview pr-7' }).click();
      const dialog = dialogNamed('Delete the preview pr-7');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect((await api('GET', previews)).body.previews).toHaveLength(1);
      await preview.getByRole('button', { name: 'Delete the preview pr-7' }).click();
      await dialog.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('No preview environments.').waitFor();
      expect((await api('GET', previews)).body.previews).toEqual([]);
      expect((await api('DELETE', previews)).status).toBe(204);
      expect((await api('PATCH', `/v1/applications/${app.appId}/settings`, { github_repository: null })).status).toBe(200);
    } finally {
      repo.remove();
    }
  }, 60_000);

  it('shows the effective configuration: each value with the scope it came from, what it shadows, secrets hidden', async () => {
    expect((await api('POST', `/v1/workspaces/${app.slugs.org}/config`, { name: 'REGION', value: 'eu-org' })).status).toBe(201);
    expect((await api('POST', `/v1/workspaces/${app.slugs.org}/config`, { name: 'LOG_LEVEL', value: 'info' })).status).toBe(201);
    expect((await api('POST', `/v1/configurations/${app.appId}`, { name: 'REGION', value: 'eu-app' })).status).toBe(201);
    expect(
      (await api('POST', `/v1/configurations/${app.appId}`, { name: 'SIGNING_KEY', value: 'never-shown-42', secret: true })).status,
    ).toBe(201);
    await page.goto(section('effective'));
    const region = page.locator('tr[data-variable="REGION"]');
    await region.waitFor();
    expect(await region.textContent()).toBe('REGIONeu-appapplicationorganization');
    expect(await page.locator('tr[data-variable="LOG_LEVEL"]').getByTestId('scope').textContent()).toBe('organization');
    expect(await page.locator('tr[data-variable="SIGNING_KEY"]').textContent()).toContain('secret (hidden)');
    expect(await page.content()).not.toContain('never-shown-42');
  }, 30_000);

  it('draws the last hour of requests on the overview from the edge counts', async () => {
    const port = localRuntime(h.ctx).router.port;
    for (let i = 0; i < 6; i++) expect((await routerGet(port, host)).status).toBe(200);
    await waitFor('the counted requests', async () => {
      const rows = (await api('GET', `/v1/applications/${app.appId}/observability/requests?minutes=60`)).body as Array<{
        requests: number;
      }>;
      return rows.reduce((n, r) => n + r.requests, 0) >= 6;
    });
    await page.goto(base + appPath);
    const total = Number(await page.getByTestId('requests-total').textContent());
    expect(total).toBeGreaterThanOrEqual(6);
    expect(await page.getByTestId('errors-total').textContent()).toBe('0 (0.0%)');
    expect(await page.getByRole('img', { name: /^Requests per minute over the last hour: \d+ in all/ }).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'overview-with-traffic-light.png'), fullPage: true });
  }, 30_000);

  it('walks every section: its title, axe light and dark at phone width, no sideways scroll, every action by keyboard', async () => {
    // The sections' tables are judged too: a scheduled job and a policy to list (a run, variables and traffic came before).
    expect((await api('PUT', `/v1/applications/${app.appId}/cron/backup`, { schedule: '@daily', command: 'echo backup' })).status).toBe(
      200,
    );
    const policy = { min: 1, max: 2, target: { requests_per_second: 50 } };
    expect((await api('PUT', `/v1/applications/${app.appId}/autoscaling/web`, policy)).status).toBe(200);
    await page.goto(base + appPath);
    const nav = page.getByRole('navigation', { name: 'Application sections' });
    await nav.waitFor();
    expect(await nav.getByRole('link').allTextContents()).toEqual(SECTIONS);
    for (const label of SECTIONS) {
      await nav.getByRole('link', { name: label, exact: true }).click();
      const title = label === 'Overview' ? 'Web · Slipway' : `${label} · Web · Slipway`;
      await page.waitForFunction((t) => document.title === t, title);
      // Each section's data is on screen (no loading note left) before it is judged.
      await page.waitForFunction(() => document.querySelectorAll('.section-body .loading').length === 0);
      const problems = [...(await axeProblems(page)).map((p) => `light ${p}`)];
      expect(await unreachableByKeyboard(page, '.section-body', '.sections a:last-child'), label).toEqual([]);
      await page.setViewportSize(PHONE);
      await page.emulateMedia({ colorScheme: 'dark' });
      problems.push(...(await axeProblems(page)).map((p) => `dark phone ${p}`));
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `${label} scrolls sideways`).toBeLessThanOrEqual(PHONE.width);
      // Every action stays on a phone's screen (none hides at the end of a table that scrolls sideways).
      const offScreen = await page.evaluate(
        (width) =>
          [...document.querySelectorAll<HTMLElement>('.section-body :is(button, a[href], input, select)')]
            .filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().right > width)
            .map((el) => (el.getAttribute('aria-label') ?? el.textContent ?? el.tagName).trim()),
        PHONE.width,
      );
      expect(offScreen, `${label}: actions off a phone's screen`).toEqual([]);
      const name = label.toLowerCase().replace(/\W+/g, '-');
      await page.screenshot({ path: join(ARTIFACTS, `${name}-dark-phone.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
      await page.setViewportSize(DESKTOP);
      // The earlier sections' light screenshots are app-sections.test.ts's.
      if (!SHOWN_ELSEWHERE.has(label)) await page.screenshot({ path: join(ARTIFACTS, `${name}-light.png`), fullPage: true });
      expect(problems, label).toEqual([]);
    }
  }, 120_000);

  it('renames the application, and deletes it only once its slug is typed out', async () => {
    await page.goto(section('settings'));
    await page.getByLabel('Display name').fill('Storefront');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('heading', { name: 'Storefront', level: 1 }).waitFor();

    const remove = page.getByRole('button', { name: 'Delete Storefront' });
    expect(await remove.isDisabled()).toBe(true);
    await page.getByLabel('Type web to confirm').fill('Storefront');
    expect(await remove.isDisabled()).toBe(true);
    expect((await api('GET', `/v1/applications/${app.slugs.org}/${app.slugs.project}/web`)).status).toBe(200);
    await page.getByLabel('Type web to confirm').fill('web');
    await remove.click();
    await page.waitForURL(`${base}/orgs/${app.slugs.org}/${app.slugs.project}`);
    expect((await api('GET', `/v1/applications/${app.slugs.org}/${app.slugs.project}/web`)).status).toBe(404);
  }, 60_000);
});
