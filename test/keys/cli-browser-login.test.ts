/**
 * The CLI browser login (issue 29, Ancla's `login`; and `slipway login --browser`), in real
 * headless Chromium against a real server: the CLI's loopback callback is a server this test
 * starts (as Ancla's CLI does) or the `slipway` process itself. The approval needs the signed-in
 * browser session, a same-origin request and a code not approved before.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { call } from '../control-plane/fixtures.js';
import { BIN, slipway } from '../cli/slipway.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`CLI browser login tests skipped: ${missing}`);

let h: Harness;
let browser: Browser;
let base: string;
let user: TestUser;
let orgSlug: string;

/** What Ancla's CLI does: listen on 127.0.0.1, take the first /callback. */
async function ancla(): Promise<{ port: number; received: Promise<URLSearchParams>; server: Server }> {
  let receive!: (q: URLSearchParams) => void;
  const received = new Promise<URLSearchParams>((r) => (receive = r));
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h2>CLI Authorized</h2>');
    if (url.pathname === '/callback') receive(url.searchParams);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, received, server };
}

async function signIn(page: Page) {
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

beforeAll(async () => {
  if (missing) return;
  h = await createHarness();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  user = await h.user();
  const org = await call(h, 'POST', '/v1/organizations', user, { name: 'Browser Co' });
  orgSlug = org.body.slug;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe.skipIf(missing !== null)('the /cli-auth page', () => {
  it("hands Ancla's CLI a working read+deploy key on its loopback callback, after sign-in and approval", async () => {
    const cli = await ancla();
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${base}/cli-auth?code=AB12-CD34&port=${cli.port}`);
      // Not signed in: the page is the sign-in form, nothing is approved.
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      await signIn(page);
      await page.getByRole('heading', { name: 'Approve a command-line login' }).waitFor();
      await expect(page.getByLabel('Confirmation code').textContent()).resolves.toBe('AB12-CD34');
      await page.getByRole('button', { name: 'Approve' }).click();
      const query = await cli.received;
      expect(query.get('code')).toBe('AB12-CD34');
      expect(query.get('username')).toBe(user.username);
      expect(query.get('email')).toBe(user.email);
      const key = query.get('api_key')!;
      expect(key).toMatch(/^slw_/);
      await page.getByText('CLI Authorized').waitFor();
      // The key works the way Ancla's CLI checks it, and only for what was approved.
      const workspaces = await h.app.inject({ method: 'GET', url: '/api/v1/workspaces/', headers: { 'x-api-key': key } });
      expect(workspaces.statusCode, workspaces.body).toBe(200);
      const write = await call(h, 'POST', `/v1/workspaces/${orgSlug}/config`, null, { name: 'X', value: 'y' }, { 'x-api-key': key });
      expect(write.status).toBe(403);
      const listed = (await call(h, 'GET', '/v1/auth/api-keys', user)).body as Array<{ kind: string; scope: { actions: string[] } | null }>;
      expect(listed.find((k) => k.kind === 'cli_login')?.scope?.actions).toEqual(['read', 'deploy']);
      // The same code is never approved twice.
      const session = (await context.cookies(base)).find((c) => c.name === 'slipway_session')!;
      const again = await call(
        h,
        'POST',
        '/v1/auth/cli-logins',
        null,
        { code: 'AB12-CD34', port: cli.port },
        { cookie: `slipway_session=${session.value}`, 'sec-fetch-site': 'same-origin' },
      );
      expect(again.status, again.raw).toBe(409);
    } finally {
      await context.close();
      cli.server.close();
    }
  });

  it('refuses an approval without the signed-in session, from another site, or by an API key', async () => {
    const body = { code: 'EF56-7890', port: 40000 };
    expect((await call(h, 'POST', '/v1/auth/cli-logins', null, body)).status).toBe(401);
    expect((await call(h, 'POST', '/v1/auth/cli-logins', user, body)).status).toBe(403);
    const login = await h.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email: user.email, password: user.password } });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const crossSite = await call(h, 'POST', '/v1/auth/cli-logins', null, body, {
      cookie,
      'sec-fetch-site': 'cross-site',
      origin: 'http://evil.example',
    });
    expect(crossSite.status).toBe(403);
    expect(
      await h.ctx.db.selectFrom('api_keys').select('id').where('kind', '=', 'cli_login').where('name', 'like', '%EF56%').execute(),
    ).toEqual([]);
    // A signed-out browser opening the link sees the sign-in form, and no key is made.
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/cli-auth?code=EF56-7890&port=40000`);
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await context.close();
    expect(await h.ctx.db.selectFrom('cli_login_approvals').select('code_hash').where('user_id', '=', user.id).execute()).toHaveLength(1);
  });

  it('`slipway login --browser` stores a key approved on the same page', async () => {
    const home = mkdtempSync(join(tmpdir(), 'slipway-browser-login-'));
    const env = {
      PATH: process.env.PATH ?? '',
      SLIPWAY_CLI_SOURCE: '1',
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: base,
    };
    const child = spawn(process.execPath, [BIN, 'login', '--browser', '--no-open'], { env });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    const exited = new Promise<number>((r) => child.on('close', (code) => r(code ?? 1)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (c) => {
        stderr += c;
        const found = /browser: (\S+)/.exec(stderr);
        if (found) resolve(found[1]!);
      });
      child.on('close', () => reject(new Error(`slipway exited: ${stderr}`)));
    });
    const code = /Confirmation code: (\S+)/.exec(stderr)![1]!;
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(url);
      await signIn(page);
      await expect(page.getByLabel('Confirmation code').textContent()).resolves.toBe(code);
      await page.getByText(/slipway CLI on/).waitFor();
      await page.getByRole('button', { name: 'Approve' }).click();
      expect(await exited, stderr).toBe(0);
      expect(stdout).toContain(`as ${user.username} through the browser`);
      await page.getByText('CLI authorized').waitFor();
    } finally {
      await context.close();
    }
    const whoami = await slipway(['whoami'], env);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.stdout).toContain(user.username);
    // `slipway logout` revokes the key it stored, though a scoped key manages no other key.
    const logout = await slipway(['logout'], env);
    expect(logout.stdout).toContain('API key revoked');
  });
});
