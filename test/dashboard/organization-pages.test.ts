// Issue 36's home overview and organization pages in real headless Chromium against a real
// server with a deployed app: the overview across organizations (who deployed, what serves),
// a notification channel created and tested with its delivery seen, an alert rule created and
// silenced (after a cancelled confirmation), an invitation sent and revoked, the add-ons' (empty; then one with its backups and "last proven restorable") and
// audit log's states, the member role control, an environment's maintenance mode, the account's sign-ins, a log_matches
// rule, the volumes of a deleted application (attached elsewhere, deleted), and a walk of the remaining pages
// (organizations, command-line login, every configuration scope, not found, signed out). axe-core on each page,
// light and dark; screenshots light, dark and phone in test-artifacts/dashboard-organization.
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { unreachableByKeyboard, axeProblemsLightAndDark } from './a11y.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`dashboard organization tests skipped: ${missing}`);

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard-organization');

let h: Harness;
let browser: Browser;
let page: Page;
let base: string;
let owner: TestUser;
let app: Deployable;
let orgPath: string;
/** A Slack-shaped receiver on loopback: the messages it was sent. */
let receiver: Server;
const received: string[] = [];

/** axe-core's serious and critical findings on the page as shown, light and dark. */
const accessibilityProblems = (p: Page = page) => axeProblemsLightAndDark(p);

async function screenshots(name: string, phone = false) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}-light.png`), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: join(ARTIFACTS, `${name}-dark.png`), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });
  if (!phone) return;
  await page.setViewportSize({ width: 375, height: 800 });
  await page.screenshot({ path: join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
}

/** Opens an organization section by its navigation link and waits for its heading. */
async function openSection(label: string) {
  await page.getByRole('navigation', { name: 'Organization sections' }).getByRole('link', { name: label }).click();
  await page.getByRole('heading', { name: label, level: 1 }).waitFor();
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
  orgPath = `/orgs/${app.slugs.org}`;
  const releaseId = await app.release({ 'server.js': NODE_APP('v1') }, 'web: node server.js\n');
  const res = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: owner.headers });
  expect((await settled(h, owner, res.json().deployment_id)).status).toBe('complete');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(base);
  await page.getByLabel('Email').fill(owner.email);
  await page.getByLabel('Password').fill(owner.password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}, 120_000);

afterAll(async () => {
  receiver?.close();
  await browser?.close();
  await h?.close();
});

describe.skipIf(missing !== null)('the home overview and organization pages in Chromium', () => {
  it('shows every application with what serves production and who deployed it, in one request', async () => {
    const overviewCalls: string[] = [];
    page.on('request', (r) => r.url().includes('/v1/') && overviewCalls.push(new URL(r.url()).pathname));
    await page.goto(base);
    const card = page.locator(`li[data-app="${app.slugs.app}"]`);
    await card.waitFor();
    expect(await card.getAttribute('data-state')).toBe('healthy');
    const text = await card.textContent();
    expect(text).toContain('serving v1');
    expect(text).toContain(`by ${owner.username}`);
    expect(await card.getByRole('img').getAttribute('aria-label')).toMatch(/last hour: /);
    // The view's data: the overview and the organizations (the session is the shell's).
    expect(overviewCalls.filter((p) => p !== '/v1/auth/session').sort()).toEqual(['/v1/organizations', '/v1/overview']);
    await page.getByRole('heading', { name: 'Organizations', level: 2 }).waitFor();
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('home', true);
    // At phone width the card stays within the screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await accessibilityProblems()).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 30_000);

  it('creates a Slack channel, sends a test and shows its delivery', async () => {
    await page.goto(base + orgPath);
    await page.getByLabel(`Role of ${owner.username}`).waitFor();
    expect(await accessibilityProblems()).toEqual([]);
    await openSection('Notifications');
    await page.getByText('No notification channels yet').waitFor();
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/slack`;
    await page.getByLabel('Kind').selectOption('slack');
    await page.getByLabel('Name', { exact: true }).fill('ops');
    await page.getByLabel('Webhook address').fill(url);
    await page.getByRole('button', { name: 'Add channel' }).click();
    const channel = page.locator('li[data-channel="ops"]');
    await channel.waitFor();
    await channel.getByRole('button', { name: 'Send test to ops' }).click();
    await channel.getByText('Test sent').waitFor();
    const delivery = channel.locator('tr[data-delivery="test"]');
    // Sent in the background: the list follows the pending delivery until its answer is in.
    await delivery.locator('.status-ok').waitFor({ timeout: 20_000 });
    expect(await delivery.textContent()).toMatch(/succeeded.*answer 200/);
    expect(received.length).toBe(1);
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('notifications');
  }, 30_000);

  it('creates an alert rule and silences it only through the confirmation', async () => {
    await openSection('Alerts');
    await page.getByText('No alert rules yet').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('api-errors');
    await page.getByLabel('Metric').selectOption('error_rate');
    await page.getByLabel('Fires above').fill('0.2');
    await page.getByRole('button', { name: 'Add rule' }).click();
    const rule = page.locator('li[data-rule="api-errors"]');
    await rule.waitFor();
    expect(await rule.textContent()).toContain('error_rate above 0.2 over 300 s');

    await rule.getByRole('button', { name: 'Silence api-errors' }).click();
    const dialog = page.getByRole('dialog', { name: 'Silence api-errors' });
    await dialog.waitFor();
    expect(await dialog.getByLabel('What will change').textContent()).toMatch(/sent\s*→\s*none for 1 hour/);
    expect(await accessibilityProblems()).toEqual([]);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const stored = async () =>
      (
        await h.app.inject({ method: 'GET', url: `/v1/organizations/${app.slugs.org}/alert-rules/api-errors`, headers: owner.headers })
      ).json();
    expect((await stored()).silenced_until).toBeNull();

    await rule.getByRole('button', { name: 'Silence api-errors' }).click();
    await dialog.getByRole('button', { name: 'Silence' }).click();
    await rule.getByText(/silenced until/).waitFor();
    expect((await stored()).silenced_until).not.toBeNull();
    await rule.getByRole('button', { name: 'Unsilence api-errors' }).waitFor();
    await rule.getByRole('button', { name: 'History' }).click();
    await rule
      .getByText(/No state changes yet|→/)
      .first()
      .waitFor();
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('alerts');

    // A log rule: the application and the text it counts; the text is shown on its card.
    await page.getByLabel('Name', { exact: true }).fill('payment-timeouts');
    await page.getByLabel('Metric').selectOption('log_matches');
    await page.getByLabel('Application', { exact: true }).selectOption({ label: `${app.slugs.project} / Web` });
    await page.getByLabel(/Text a log line holds/).fill('Payment TIMEOUT');
    await page.getByLabel(/In any case/).check();
    await page.getByLabel(/Fires above/).fill('3');
    expect(await accessibilityProblems()).toEqual([]);
    await page.getByRole('button', { name: 'Add rule' }).click();
    const logRule = page.locator('li[data-rule="payment-timeouts"]');
    await logRule.waitFor();
    expect(await logRule.textContent()).toContain(`log_matches “Payment TIMEOUT” (any case) above 3 over 300 s · ${app.slugs.app}`);
    const logRuleStored = (
      await h.app.inject({ method: 'GET', url: `/v1/organizations/${app.slugs.org}/alert-rules/payment-timeouts`, headers: owner.headers })
    ).json();
    expect(logRuleStored).toMatchObject({
      metric: 'log_matches',
      pattern: 'Payment TIMEOUT',
      ignore_case: true,
      application_id: app.appId,
    });
  }, 30_000);

  it('sends an invitation, shows its link, and revokes it', async () => {
    await openSection('Invitations');
    await page.getByText('No open invitations.').waitFor();
    await page.getByLabel('E-mail').fill('new.person@example.com');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    expect(await page.locator('[data-invitation-link]').textContent()).toMatch(/inv_/);
    const row = page.locator('tr[data-invitation="new.person@example.com"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('viewer');
    // The same address again is refused next to the field.
    await page.getByLabel('E-mail').fill('new.person@example.com');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    expect(await page.locator('#invite-email-error').textContent()).toMatch(/open invitation.*\(request req-\w+\)/);
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('invitations');
    await row.getByRole('button', { name: 'Revoke the invitation of new.person@example.com' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('No open invitations.').waitFor();
  }, 30_000);

  it("shows the add-ons' empty state, the audit log, maintenance mode through the confirmation, and the account's sign-ins", async () => {
    await openSection('Add-ons');
    await page.getByText('No add-ons yet').waitFor();
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('addons');

    await openSection('Audit log');
    const log = page.getByRole('table', { name: 'Audit log' });
    await log
      .getByText(/alert-rules/)
      .first()
      .waitFor();
    expect(await log.textContent()).toContain(owner.username);
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('audit');

    // Maintenance of production from the project's environments: the page's text shown before it is turned on.
    await page.goto(`${base}${orgPath}/${app.slugs.project}`);
    await page.getByRole('button', { name: 'Maintenance of production' }).click();
    await page.getByLabel('Page text (optional)').fill('Back at noon');
    await page.getByRole('button', { name: 'Turn on maintenance of production' }).click();
    const dialog = page.getByRole('dialog', { name: 'Put production in maintenance' });
    expect(await dialog.textContent()).toContain('The page says: “Back at noon”');
    await dialog.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText(/^on since .* by /).waitFor();
    const maintenance = await h.app.inject({
      method: 'GET',
      url: `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production/maintenance`,
      headers: owner.headers,
    });
    expect(maintenance.json()).toMatchObject({ enabled: true, message: 'Back at noon', enabled_by: owner.username });
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('project-maintenance');

    await page.goto(`${base}/account`);
    const signIns = page.getByRole('table', { name: 'Sign-ins' });
    await signIns.getByText('this one').waitFor();
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('account');
  }, 30_000);

  it("lists a deleted application's volumes with their size, attaches one to another application and deletes the other, each through the confirmation", async () => {
    const inject = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
      const res = await h.app.inject({ method, url, headers: owner.headers, ...(payload ? { payload } : {}) });
      expect(res.statusCode, res.body).toBeLessThan(300);
      return res.body ? res.json() : undefined;
    };
    await page.goto(`${base}${orgPath}/manage/volumes`);
    await page.getByText('No detached volumes').waitFor();
    expect(await accessibilityProblems()).toEqual([]);

    // Two applications nothing serves: one gets two volumes and is deleted, the other takes one of them.
    const projectId = (await inject('GET', `/v1/projects/${app.slugs.org}/${app.slugs.project}`)).id;
    const doomed = (await inject('POST', '/v1/applications', { name: 'Scratch', project_id: projectId })).id;
    const spare = (await inject('POST', '/v1/applications', { name: 'Spare', project_id: projectId })).id;
    await inject('POST', `/v1/applications/${doomed}/volumes`, { name: 'keep', mount_path: '/data', size_mib: 16 });
    await inject('POST', `/v1/applications/${doomed}/volumes`, { name: 'scrap', mount_path: '/scrap', size_mib: 16 });
    await inject('DELETE', `/v1/applications/${doomed}`);

    await page.reload();
    const keep = page.locator('li[data-volume="keep"]');
    await keep.waitFor();
    expect(await keep.textContent()).toMatch(/was mounted at\s*\/data.*16 MiB/);
    await keep.getByLabel('Attach keep to').selectOption({ label: `${app.slugs.project} / Spare` });
    await keep.getByRole('button', { name: 'Attach keep to Spare' }).click();
    const attach = page.getByRole('dialog', { name: 'Attach keep to Spare' });
    expect(await attach.getByLabel('What will change').textContent()).toMatch(/detached\s*→\s*mounted at \/data/);
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('volumes', true);
    await page.setViewportSize({ width: 1280, height: 900 });
    await attach.getByRole('button', { name: 'Attach' }).click();
    await keep.waitFor({ state: 'detached' });
    expect((await inject('GET', `/v1/applications/${spare}/volumes`)).map((v: { name: string }) => v.name)).toEqual(['keep']);

    const scrap = page.locator('li[data-volume="scrap"]');
    await scrap.getByRole('button', { name: 'Delete volume scrap' }).click();
    await page.getByRole('dialog', { name: 'Delete the volume scrap' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No detached volumes').waitFor();
    expect(await inject('GET', `/v1/organizations/${app.slugs.org}/volumes/detached`)).toEqual([]);
    await inject('DELETE', `/v1/applications/${spare}/volumes/keep`);
  }, 60_000);

  it('shows an add-on created through the API with its backups and "last proven restorable"', async () => {
    const addons = `/v1/organizations/${app.slugs.org}/addons`;
    const call = (url: string, payload?: object) =>
      h.app.inject({ method: 'POST', url, headers: owner.headers, ...(payload ? { payload } : {}) });
    expect((await call(addons, { name: 'shopdb', kind: 'postgres' })).statusCode).toBe(201);
    expect((await call(`${addons}/shopdb/backups`)).statusCode).toBe(201);
    const drill = await call(`${addons}/shopdb/drills`);
    expect(drill.json(), drill.body).toMatchObject({ ok: true });

    await page.goto(`${base}${orgPath}`);
    await openSection('Add-ons');
    const item = page.locator('li[data-addon="shopdb"]');
    await item.getByText(/^Last proven restorable /).waitFor();
    expect(await item.textContent()).toMatch(/shopdb\s*postgres\s*running/);
    await item.getByRole('button', { name: 'Attach, backups and restore' }).click();
    const table = page.getByRole('table', { name: 'Backups of shopdb' });
    await table.waitFor();
    expect(await table.locator('tbody tr').count()).toBe(1);
    expect(await table.locator('tbody tr').textContent()).toMatch(/completed\s*manual/);
    expect(await accessibilityProblems()).toEqual([]);
    await screenshots('addon-backups');
  }, 60_000);

  it('walks the remaining pages: each titled by its heading, no serious axe finding light or dark, every action by keyboard', async () => {
    // A team, for its configuration page.
    await page.goto(base + orgPath);
    await page.getByLabel('Team name').fill('Platform');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('link', { name: 'Configuration of Platform' }).waitFor();
    const { org, project } = app.slugs;
    const pages: Array<[string, string]> = [
      ['/orgs', 'Organizations'],
      ['/cli-auth?code=ABCD-EFGH&port=45678&client=slipway', 'Approve a command-line login'],
      ['/cli-auth', 'Command-line login'],
      [`/config/${org}`, `Configuration: Organization ${org}`],
      [`/config/${org}/teams/platform`, 'Configuration: Team platform'],
      [`/config/${org}/projects/${project}`, `Configuration: Project ${project}`],
      [`/config/${org}/projects/${project}/envs/production`, `Configuration: Environment production of ${project}`],
      ['/no/such/page', 'Not found'],
    ];
    const found: string[] = [];
    for (const [path, heading] of pages) {
      await page.goto(base + path);
      await page.getByRole('heading', { name: heading, level: 1, exact: true }).waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      if ((await page.title()) !== `${heading} · Slipway`) found.push(`${path} title: ${await page.title()}`);
      found.push(...(await accessibilityProblems()).map((p) => `${path} ${p}`));
      found.push(...(await unreachableByKeyboard(page, 'main', 'header.top button')).map((a) => `${path} unreachable ${a}`));
    }
    expect(found).toEqual([]);

    // Signed out: the login page.
    const signedOut = await browser.newContext();
    const p = await signedOut.newPage();
    await p.goto(base);
    await p.getByLabel('Email').waitFor();
    expect(await p.title()).toBe('Log in · Slipway');
    expect(await accessibilityProblems(p)).toEqual([]);
    await p.getByLabel('Email').focus();
    expect(await unreachableByKeyboard(p, 'body', 'input[name="email"]')).toEqual([]);
    await signedOut.close();
  }, 60_000);

  it('asks the overview for its first page of 50 applications and shows the next ones on demand', async () => {
    // An organization sorting after the others, with enough applications to need a second page.
    const created = await h.app.inject({ method: 'POST', url: '/v1/organizations', headers: owner.headers, payload: { name: 'Zz many' } });
    const org = created.json() as { id: string };
    const project = await h.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: owner.headers,
      payload: { name: 'fleet', organization_id: org.id },
    });
    for (let i = 0; i < 50; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/applications',
        headers: owner.headers,
        payload: { name: `svc-${String(i).padStart(2, '0')}`, project_id: project.json().id },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const total = (await h.app.inject({ method: 'GET', url: '/v1/overview', headers: owner.headers })).json().applications.length;
    expect(total).toBeGreaterThan(50);

    const asked: string[] = [];
    const listen = (r: { url(): string }) => r.url().includes('/v1/overview') && asked.push(new URL(r.url()).search);
    page.on('request', listen);
    await page.goto(base);
    const cards = page.locator('ul.overview-apps > li');
    const more = page.getByRole('button', { name: 'Show more applications' });
    await more.waitFor();
    expect(await cards.count()).toBe(50);
    // Chosen by organization, project and application slug: the new organization's last one is on the next page.
    expect(await page.locator('li[data-app="svc-49"]').count()).toBe(0);
    expect(await accessibilityProblems()).toEqual([]);
    await more.click();
    await page.locator('li[data-app="svc-49"]').waitFor();
    expect(await cards.count()).toBe(total);
    await more.waitFor({ state: 'detached' });
    page.off('request', listen);
    expect(asked).toEqual(['?page=1&per_page=50', '?page=2&per_page=50']);
  }, 60_000);
});
