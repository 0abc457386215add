// Issue 13's proof: real headless Chromium (Debian's `chromium`, driven by playwright-core) against a
// real Slipway server (HTTP API, PostgreSQL, pipeline workers, local runtime and router) started here.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { MetricsSampler } from '../../src/modules/observability/index.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`dashboard browser tests skipped: ${missing}`);

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const SECRET = 'sk-live-9c41d7e2aa';
const LONG = 180_000;

let h: Harness;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
let owner: TestUser;
let repo: TestRepo;
let appId: string;
let appPath: string;
/** Every non-stream response body the dashboard received (to prove the secret never reached it). */
const bodies: string[] = [];

const api = async (method: string, url: string, payload?: unknown, user = owner) => {
  const res = await h.app.inject({
    method: method as 'GET',
    url,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: res.statusCode, body: res.body ? res.json() : undefined };
};

async function login(p: Page, user: TestUser) {
  await p.goto(base);
  await p.getByLabel('Email').fill(user.email);
  await p.getByLabel('Password').fill(user.password);
  await p.keyboard.press('Enter');
  await p.getByRole('heading', { name: 'Organizations' }).waitFor();
}

async function screenshots(name: string) {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** The page is readable at 375 px: nothing wider than the viewport. */
async function fitsPhone(p: Page) {
  await p.setViewportSize({ width: 375, height: 800 });
  // The page's width, and what sticks out when it is too wide (to say which element to fix).
  const width = await p.evaluate(() => {
    const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5);
    const overflow = document.documentElement.scrollWidth;
    return overflow <= window.innerWidth ? overflow : `${overflow}: ${wide.map((e) => `${e.tagName}.${e.className}`).join(' ')}`;
  });
  await p.setViewportSize({ width: 1280, height: 900 });
  return width;
}

async function latestDeployment() {
  return (await api('GET', `/v1/applications/${appId}/deployments`)).body.items[0] as
    { id: string; status: string; release: { version: number }; deploy_metadata: { url?: string } | null } | undefined;
}

beforeAll(async () => {
  if (missing) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 1000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  owner = await h.user();
  repo = new TestRepo();
  repo.commit({ 'server.py': pythonHttpApp('"hello v1 " + os.environ["GREETING"]'), Procfile: 'web: python3 server.py\n' }, 'v1');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('response', async (response) => {
    if ((response.headers()['content-type'] ?? '').includes('text/event-stream')) return;
    bodies.push(await response.text().catch(() => ''));
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
  repo?.remove();
});

describe.skipIf(missing !== null)('the dashboard in Chromium', () => {
  it('logs in and creates an organization, a project and an application through the pages', async () => {
    await page.goto(base);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Log in' }).click();
    // The API's own words, not a generic failure.
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/invalid|incorrect|wrong/i);
    await login(page, owner);
    await page.getByText('No organizations yet').waitFor();

    await page.getByLabel('Organization name').fill('Acme Dash');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.getByRole('link', { name: 'Acme Dash' }).click();
    await page.getByLabel('Project name').fill('Shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('link', { name: 'Shop' }).click();
    await page.getByLabel('Application name').fill('Web');
    await page.getByRole('button', { name: 'Create application' }).click();
    await page.getByLabel('Search applications').fill('we');
    await page.getByRole('link', { name: 'Web' }).click();
    await page.getByRole('heading', { name: 'Web', level: 1 }).waitFor();
    appPath = new URL(page.url()).pathname;
    expect(appPath).toMatch(/^\/apps\/acme-dash\/shop\/web$/);
    await page.locator('.empty', { hasText: 'Nothing is serving yet' }).waitFor();
    await screenshots('application-empty');

    appId = (await api('GET', '/v1/applications/acme-dash/shop/web')).body.id;

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Health check path').fill('health');
    await page.getByRole('button', { name: 'Save settings' }).click();
    // Refused input comes back in the API's words, naming the field.
    expect(await page.getByRole('alert').textContent()).toMatch(/health_check_path/);
    await page.getByLabel('Repository (git URL or path)').fill(repo.dir);
    await page.getByLabel('Health check path').fill('/');
    await page.getByLabel('Deployment timeout (seconds)').fill('60');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').getByText('Settings saved.').waitFor();
    expect((await api('GET', '/v1/applications/acme-dash/shop/web')).body).toMatchObject({
      github_repository: repo.dir,
      deployment_timeout: 60,
    });
  }, 60_000);

  it('imports a .env with a secret and shows it masked; the value never reaches the browser', async () => {
    await page.getByRole('link', { name: 'Configuration' }).click();
    const contents = page.getByLabel('Contents');
    await contents.fill('GREETING=from-dotenv\nbad line here\n');
    await page.getByRole('button', { name: 'Import' }).click();
    await page.locator('.bulk', { hasText: 'Created 1, updated 0, skipped 0, errors 1.' }).waitFor();
    await contents.fill(`# secrets\nexport API_TOKEN="${SECRET}"\n`);
    await page.getByLabel('Import every variable as a secret').check();
    await page.getByRole('button', { name: 'Import' }).click();
    await page.locator('.bulk', { hasText: 'Created 1, updated 0, skipped 0, errors 0.' }).waitFor();
    // A secret added one at a time through the form is write-only too.
    await page.getByLabel('Name').fill('DB_PASSWORD');
    await page.getByLabel('Value', { exact: true }).fill(`${SECRET}-db`);
    await page.getByLabel('Secret (write-only)').check();
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.locator('tr[data-variable="DB_PASSWORD"] .masked').waitFor();
    const row = page.locator('tr[data-variable="API_TOKEN"]');
    await row.waitFor();
    expect(await row.locator('.masked').textContent()).toContain('secret');
    expect(await page.locator('tr[data-variable="GREETING"]').textContent()).toContain('from-dotenv');
    await screenshots('configuration');
    expect(await page.content()).not.toContain(SECRET);
    expect(bodies.length).toBeGreaterThan(0);
    expect(bodies.filter((b) => b.includes(SECRET))).toEqual([]);
  }, 60_000);

  it(
    'shows a deploy made through the API without reloading and follows its log live to completion',
    async () => {
      await page.getByRole('link', { name: 'Overview' }).click();
      await page.locator('.live[data-live="true"]').waitFor();
      const started = await api('POST', `/v1/applications/${appId}/deploy`);
      expect(started.status).toBe(202);
      // No reload from here on: the events stream brings the build, the release and the deployment.
      await page.locator('.panel', { hasText: 'Builds' }).getByText('Image v1').waitFor({ timeout: LONG });
      const log = page.locator('section.log');
      await log.waitFor({ timeout: LONG });
      await log.locator('.log-state[data-state="live"], .log-state[data-state="complete"]').waitFor({ timeout: LONG });
      await log.locator('.log-state[data-state="complete"]').waitFor({ timeout: LONG });
      const text = await log.locator('.log-lines').textContent();
      expect(text?.split('\n').length).toBeGreaterThan(1);
      await page.getByTestId('serving-release-production').getByText('v1').waitFor({ timeout: LONG });
      await screenshots('application-deployed');

      // The URL the page shows answers with the app.
      const href = await page.locator('.serving[data-environment="production"] .facts a').getAttribute('href');
      expect(href).toBeTruthy();
      const url = new URL(href!);
      const answer = await routerGet(localRuntime(h.ctx).router.port, url.host, '/');
      expect(answer).toMatchObject({ status: 200, body: 'hello v1 from-dotenv' });
    },
    LONG + 60_000,
  );

  it(
    'scales a process type from the page',
    async () => {
      const form = page.getByRole('form', { name: 'Scale another process type' });
      await form.getByLabel('Process type').fill('web');
      await form.getByLabel('Instances').fill('2');
      await form.getByRole('button', { name: 'Scale' }).click();
      await page.getByTestId('count-web').getByText('2 running').waitFor();
      expect((await api('GET', '/v1/applications/acme-dash/shop/web')).body.process_counts).toMatchObject({ web: 2 });
      // What serves, live: both instances appear in the table without a reload, healthy.
      const instances = page.getByTestId('instances-production');
      await instances.locator('tr[data-instance="web.2"]', { hasText: 'healthy' }).waitFor({ timeout: LONG });
      await instances.locator('tr[data-instance="web.1"]', { hasText: 'healthy' }).waitFor();

      // An instance that dies is restarted by the runtime; the page shows the restart as it happens.
      const victim = await h.ctx.db
        .selectFrom('instances')
        .select('pid')
        .where('application_id', '=', appId)
        .where('process_type', '=', 'web')
        .where('ordinal', '=', 2)
        .executeTakeFirstOrThrow();
      process.kill(victim.pid!, 'SIGKILL');
      await instances.locator('tr[data-instance="web.2"] td:nth-child(3)', { hasText: '1' }).waitFor({ timeout: LONG });
      await screenshots('application-instances');

      // A change made through the API, not the page: back to one instance, and the table follows.
      expect((await api('POST', `/v1/applications/${appId}/scale`, { process_counts: { web: 1 } })).status).toBeLessThan(300);
      await instances.locator('tr[data-instance="web.2"]').waitFor({ state: 'detached', timeout: LONG });
      const rows = (await api('GET', `/v1/applications/${appId}/instances`)).body as Array<{ name: string; restarts: number }>;
      expect(rows.map((r) => r.name)).toEqual(['web.1']);
      const stranger = await h.user();
      expect((await api('GET', `/v1/applications/${appId}/instances`, undefined, stranger)).status).toBe(403);
      expect((await api('GET', `/v1/applications/${appId}/instances?environment=qa`)).status).toBe(404);
    },
    LONG,
  );

  it(
    'rolls back to the previous release with the button and shows it serving',
    async () => {
      repo.commit({ 'server.py': pythonHttpApp('"hello v2 " + os.environ["GREETING"]') }, 'v2');
      expect((await api('POST', `/v1/applications/${appId}/deploy`)).status).toBe(202);
      await page.getByTestId('serving-release-production').getByText('v2').waitFor({ timeout: LONG });
      const deployed = await latestDeployment();
      const host = new URL(deployed!.deploy_metadata!.url!).host;
      expect((await routerGet(localRuntime(h.ctx).router.port, host)).body).toBe('hello v2 from-dotenv');

      // The release's detail shows what changed, names the secret without its value.
      await page.locator('.panel', { hasText: 'Releases' }).getByRole('button', { name: 'v2', exact: true }).click();
      const release = page.locator('.release-detail');
      await release.getByText('Image changes').waitFor();
      expect(await release.textContent()).toContain('API_TOKEN (secret)');
      expect(bodies.filter((b) => b.includes(SECRET))).toEqual([]);

      await page.getByRole('button', { name: 'Roll back' }).click();
      await page.getByRole('dialog', { name: 'Roll back Web' }).getByRole('button', { name: 'Roll back' }).click();
      await page.getByRole('status').getByText('Rollback started.').waitFor();
      await page.getByTestId('serving-release-production').getByText('v1').waitFor({ timeout: LONG });
      await waitFor(
        'the rollback serving',
        async () => (await routerGet(localRuntime(h.ctx).router.port, host)).body === 'hello v1 from-dotenv',
        LONG,
      );
    },
    2 * LONG,
  );

  it(
    'creates an environment and promotes what serves in production into it',
    async () => {
      await page.getByRole('link', { name: 'shop', exact: true }).click();
      await page.getByLabel('Environment name').fill('Staging');
      await page.getByRole('button', { name: 'Create environment' }).click();
      const promote = page.getByRole('group', { name: 'Promote into staging' });
      await promote.getByLabel('Promote into staging from').selectOption('production');
      await promote.getByRole('button', { name: 'Promote' }).click();
      await page.getByRole('dialog', { name: 'Promote into staging' }).getByRole('button', { name: 'Promote' }).click();
      await page.locator('section.log .log-state[data-state="complete"]').waitFor({ timeout: LONG });
      expect(await page.locator('section.log .log-lines').textContent()).toContain('web |');
      await screenshots('environments');
      const answer = await routerGet(localRuntime(h.ctx).router.port, `web.staging.shop.acme-dash.localhost`);
      expect(answer).toMatchObject({ status: 200, body: 'hello v1 from-dotenv' });
      await page.goto(base + appPath);
    },
    LONG + 60_000,
  );

  it('adds a member to the organization and to a new team', async () => {
    const colleague = await h.user();
    await page.goto(`${base}/orgs/acme-dash`);
    await page.getByLabel('Username or e-mail').fill('nobody-here');
    await page.getByRole('button', { name: 'Add member' }).click();
    expect(await page.getByRole('alert').textContent()).toMatch(/not found/i);
    await page.getByLabel('Username or e-mail').fill(colleague.username);
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('cell', { name: new RegExp(`^${colleague.username}`) }).waitFor();
    await page.getByLabel('Team name').fill('Ops');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByLabel('New member of Ops').fill(colleague.username);
    await page.getByRole('button', { name: 'Add to team' }).click();
    await page.getByRole('button', { name: `Remove ${colleague.username} from Ops` }).waitFor();
    await screenshots('organization');
    const teams = await api('GET', '/v1/workspaces/acme-dash/teams');
    expect(teams.body).toMatchObject([{ slug: 'ops', members: [{ username: colleague.username }] }]);
  }, 60_000);

  it('sets variables at the organization, team, project and environment scopes, secrets masked', async () => {
    const orgSecret = `${SECRET}-org`;
    await page.goto(`${base}/orgs/acme-dash`);
    await page.getByRole('link', { name: 'Organization configuration' }).click();
    await page.getByRole('heading', { name: 'Configuration: Organization acme-dash' }).waitFor();
    await page.locator('.empty', { hasText: 'No variables yet.' }).waitFor();
    // A .env is read in the browser: the lines it cannot read are reported with the bulk result.
    const contents = page.getByLabel('Contents');
    await contents.fill('REGION=eu-west\nnot a line\n');
    await page.getByRole('button', { name: 'Import' }).click();
    await page.locator('.bulk', { hasText: 'Created 1, updated 0, skipped 0, errors 1.' }).waitFor();
    await contents.fill(`ORG_TOKEN="${orgSecret}"\n`);
    await page.getByLabel('Import every variable as a secret').check();
    await page.getByRole('button', { name: 'Import' }).click();
    await page.locator('tr[data-variable="ORG_TOKEN"] .masked').waitFor();
    expect(await page.locator('tr[data-variable="REGION"]').textContent()).toContain('eu-west');
    await screenshots('configuration-organization');

    // A team's variables: added, then edited in place.
    await page.goto(`${base}/orgs/acme-dash`);
    await page.getByRole('link', { name: 'Configuration of Ops' }).click();
    await page.getByRole('heading', { name: 'Configuration: Team ops' }).waitFor();
    await page.getByLabel('Name').fill('TEAM_FLAG');
    await page.getByLabel('Value', { exact: true }).fill('on');
    await page.getByRole('button', { name: 'Add variable' }).click();
    const flag = page.locator('tr[data-variable="TEAM_FLAG"]');
    await flag.getByText('on', { exact: true }).waitFor();
    await flag.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('New value of TEAM_FLAG').fill('off');
    await page.getByRole('button', { name: 'Save' }).click();
    await flag.getByText('off', { exact: true }).waitFor();

    // A project's: added, then deleted.
    await page.goto(`${base}/orgs/acme-dash/shop`);
    await page.getByRole('link', { name: 'Project configuration' }).click();
    await page.getByRole('heading', { name: 'Configuration: Project shop' }).waitFor();
    await page.getByLabel('Name').fill('PROJECT_NOTE');
    await page.getByLabel('Value', { exact: true }).fill('hello');
    await page.getByRole('button', { name: 'Add variable' }).click();
    const note = page.locator('tr[data-variable="PROJECT_NOTE"]');
    await note.waitFor();
    await note.getByRole('button', { name: 'Delete PROJECT_NOTE' }).click();
    await page.getByRole('dialog', { name: 'Delete the variable PROJECT_NOTE' }).getByRole('button', { name: 'Delete' }).click();
    await page.locator('.empty', { hasText: 'No variables yet.' }).waitFor();

    // An environment's, reached from the project's environments.
    await page.goto(`${base}/orgs/acme-dash/shop`);
    await page.getByRole('link', { name: 'Configuration of production' }).click();
    await page.getByRole('heading', { name: 'Configuration: Environment production of shop' }).waitFor();
    await page.getByLabel('Name').fill('ENV_ONLY');
    await page.getByLabel('Value', { exact: true }).fill('prod');
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.locator('tr[data-variable="ENV_ONLY"]').waitFor();
    expect(await fitsPhone(page)).toBeLessThanOrEqual(375);

    // Each landed in its own scope, and an application in the environment inherits them.
    const names = async (url: string) =>
      ((await api('GET', url)).body as Array<{ name: string; value: string }>).map((v) => `${v.name}=${v.value}`).sort();
    expect(await names('/v1/workspaces/acme-dash/config')).toEqual(['ORG_TOKEN=**secret**', 'REGION=eu-west']);
    expect(await names('/v1/workspaces/acme-dash/teams/ops/config')).toEqual(['TEAM_FLAG=off']);
    expect(await names('/v1/workspaces/acme-dash/projects/shop/config')).toEqual([]);
    expect(await names('/v1/workspaces/acme-dash/projects/shop/envs/production/config')).toEqual(['ENV_ONLY=prod']);
    const resolved = JSON.stringify((await api('GET', '/v1/workspaces/acme-dash/projects/shop/envs/production/services/web/config')).body);
    expect(resolved).toContain('ENV_ONLY');
    expect(resolved).toContain('REGION');
    expect(await page.content()).not.toContain(orgSecret);
    expect(bodies.filter((b) => b.includes(orgSecret))).toEqual([]);
  }, 90_000);

  it('draws the metrics page with real samples and stays readable at 375 px', async () => {
    // Samples of the running app, taken as the platform's sampler takes them (on its timer, here at three moments).
    const sampler = new MetricsSampler(h.ctx.db, h.ctx.runtime!, 60, console);
    for (const minutesAgo of [2, 1, 0]) expect(await sampler.sampleOnce(new Date(Date.now() - minutesAgo * 60_000))).toBeGreaterThan(0);
    await page.goto(base + appPath);
    await page.getByRole('link', { name: 'Metrics' }).click();
    await page.getByRole('heading', { name: 'Pipeline' }).waitFor();
    await page.locator('table').getByText('build').waitFor();
    for (const title of ['CPU', 'Memory', 'Instances', 'Restarts']) await page.getByRole('img', { name: `${title} chart` }).waitFor();
    // Each chart's series is drawn: its line colour is on the canvas, not only the axes.
    const seriesPixels = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLCanvasElement>('.chart canvas')].map((canvas) => {
        const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i] === 0x44 && data[i + 1] === 0x93 && data[i + 2] === 0xf8) n++;
        return n;
      }),
    );
    expect(seriesPixels).toHaveLength(4);
    for (const n of seriesPixels) expect(n).toBeGreaterThan(10);
    // The pipeline metrics count what this app went through.
    const build = page.locator('tr', { hasText: 'build' });
    expect(Number(await build.locator('td').nth(1).textContent())).toBeGreaterThan(0);
    await screenshots('metrics');
    for (const path of [
      '/',
      '/orgs/acme-dash/shop',
      appPath,
      `${appPath}/configuration`,
      `${appPath}/metrics`,
      `${appPath}/settings`,
      '/orgs/acme-dash',
      '/account',
    ]) {
      await page.goto(base + path);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      expect({ path, width: await fitsPhone(page) }).toEqual({ path, width: 375 });
    }
    await page.goto(base + appPath);
    await screenshots('application');
  }, 60_000);

  it('is usable with the keyboard alone: Tab reaches the organization link, Enter opens it', async () => {
    await page.goto(base);
    await page.getByRole('link', { name: 'Acme Dash' }).waitFor();
    let focused = '';
    for (let n = 0; n < 20 && focused !== 'Acme Dash'; n++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    }
    expect(focused).toBe('Acme Dash');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Acme Dash', level: 1 }).waitFor();
  });

  it('shows a member of another organization none of it', async () => {
    const stranger = await h.user();
    const other = await browser.newContext();
    const p = await other.newPage();
    await login(p, stranger);
    expect(await p.locator('main').textContent()).not.toContain('Acme Dash');
    await p.goto(base + appPath);
    const alert = p.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/permission denied|not found/i);
    expect(await p.locator('main').textContent()).not.toContain('from-dotenv');
    await other.close();
  }, 60_000);

  it('logs out', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('Email').waitFor();
    expect((await page.request.get(`${base}/v1/auth/session`)).ok()).toBe(true);
    expect(await (await page.request.get(`${base}/v1/auth/session`)).json()).toMatchObject({ authenticated: false });
  });
});
