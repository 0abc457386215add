/**
 * Single sign-on (issue 32) against a real OpenID Connect provider (`oidc-provider`) started here
 * on loopback: the dashboard's "Sign in with" button and the CLI's browser login in real headless
 * Chromium, a group claim that grants a role on an organization, and the refusals (tampered state,
 * an issuer that is down, a token for another audience, an e-mail domain not allowed), each a
 * clear 4xx, audited, with no user created.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_DIST } from '../../src/dashboard/serve.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { startTestIssuer, type TestIssuer } from '../helpers/oidc-provider.js';
import { call } from '../control-plane/fixtures.js';
import { BIN, slipway } from '../cli/slipway.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM)
  ? 'install chromium (apt-get install chromium)'
  : !existsSync(join(DASHBOARD_DIST, 'index.html'))
    ? 'build the dashboard (npm run build:dashboard)'
    : null;
if (missing) console.warn(`single sign-on browser tests skipped: ${missing}`);

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'sso');

let h: Harness;
let idp: TestIssuer;
let browser: Browser;
let base: string;
let admin: TestUser;
let owner: TestUser;

const ACCOUNTS = {
  alice: { email: 'alice@example.com', groups: ['platform-deployers'] },
  bob: { email: 'bob@example.com', groups: ['platform-admins'] },
  carol: { email: 'carol@example.com' },
  mallory: { email: 'mallory@elsewhere.test', groups: ['platform-admins'] },
  // Changed between sign-ins: groups given and taken away at the identity provider.
  dave: { email: 'dave@example.com', groups: [] as string[] },
};

/** A free loopback port (Slipway's address must be known before it starts: it is the redirect URI's). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

const userCount = async () =>
  Number(
    (
      await h.ctx.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** The sign-in audit rows (newest first), through the API. */
async function signInRows() {
  const res = await call(h, 'GET', '/v1/audit-log?resource_type=sessions&per_page=100', admin);
  expect(res.status, res.raw).toBe(200);
  return (
    res.body.items as Array<{ actor: { username: string | null; credential_kind: string }; denied: boolean; action: string; after: any }>
  ).filter((row) => row.action.includes('/auth/oidc/'));
}

/** Through the provider's own pages: its login form (any password), then its consent. */
async function signInAtProvider(page: Page, login: string) {
  await page
    .locator('input[name="login"]')
    .waitFor({ timeout: 10_000 })
    .catch(async () => {
      throw new Error(`no login form at ${page.url()}: ${(await page.content()).replace(/<style[\s\S]*?<\/style>/g, '').slice(0, 3000)}`);
    });
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/** A whole sign-in through `acme` in a fresh browser: the session cookie it ends with. */
async function signInThrough(login: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const callback = page.waitForResponse((r) => r.url().includes('/v1/auth/oidc/callback'));
    await page.goto(`${base}/v1/auth/oidc/acme/start`);
    await signInAtProvider(page, login);
    expect((await callback).status()).toBe(302);
    const session = (await context.cookies(base)).find((c) => c.name === 'slipway_session');
    return `slipway_session=${session!.value}`;
  } finally {
    await context.close();
  }
}

/** Starts a sign-in in a fresh browser and answers the callback's response (status and body). */
async function signInExpectingRefusal(issuer: string, login: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const callback = page.waitForResponse((r) => r.url().includes('/v1/auth/oidc/callback'));
    await page.goto(`${base}/v1/auth/oidc/${issuer}/start`);
    await signInAtProvider(page, login);
    const response = await callback;
    return { status: response.status(), body: (await response.json()) as { message: string } };
  } finally {
    await context.close();
  }
}

beforeAll(async () => {
  if (missing) return;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIssuer({ redirectUri: `${base}/v1/auth/oidc/callback`, accounts: ACCOUNTS });
  h = await createHarness({ DASHBOARD_URL: base });
  await h.app.listen({ host: '127.0.0.1', port });
  admin = await h.user({ admin: true });
  owner = await h.user();
  expect((await call(h, 'POST', '/v1/organizations', owner, { name: 'Platform' })).status).toBe(201);
  const issuer = {
    name: 'acme',
    display_name: 'Acme ID',
    discovery_url: idp.url,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
    allowed_email_domains: ['example.com'],
    group_claim: 'groups',
    extra_scopes: ['groups'],
  };
  const created = await call(h, 'POST', '/v1/sso/issuers', admin, issuer);
  expect(created.status, created.raw).toBe(201);
  expect(created.raw).not.toContain(idp.clientSecret);
  // The same provider, seen through a name whose token answers the test re-signs for another audience.
  expect((await call(h, 'POST', '/v1/sso/issuers', admin, { ...issuer, name: 'acme-aud', display_name: 'Acme (audience)' })).status).toBe(
    201,
  );
  // Nothing listens there: the issuer is down.
  const down = `http://127.0.0.1:${await freePort()}`;
  expect(
    (await call(h, 'POST', '/v1/sso/issuers', admin, { ...issuer, name: 'down', display_name: 'Down', discovery_url: down })).status,
  ).toBe(201);
  for (const [group, role] of [
    ['platform-deployers', 'deployer'],
    ['platform-admins', 'admin'],
  ]) {
    const mapped = await call(h, 'POST', '/v1/sso/issuers/acme/group-mappings', admin, { group, organization: 'platform', role });
    expect(mapped.status, mapped.raw).toBe(201);
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await idp?.close();
});

describe.skipIf(missing !== null)('single sign-on through OpenID Connect', () => {
  it('only site admins configure issuers, the secret is never shown, and bad mappings are refused', async () => {
    expect((await call(h, 'GET', '/v1/sso/issuers', owner)).status).toBe(403);
    expect(
      (await call(h, 'POST', '/v1/sso/issuers/acme/group-mappings', owner, { group: 'x', organization: 'platform', role: 'admin' })).status,
    ).toBe(403);
    const listed = await call(h, 'GET', '/v1/sso/issuers', admin);
    expect(listed.body.map((i: { name: string }) => i.name)).toEqual(['acme', 'acme-aud', 'down']);
    expect(listed.raw).not.toContain(idp.clientSecret);
    const stored = await h.ctx.db
      .selectFrom('oidc_issuers')
      .select('client_secret_sealed')
      .where('name', '=', 'acme')
      .executeTakeFirstOrThrow();
    expect(stored.client_secret_sealed).not.toContain(idp.clientSecret);
    const badRole = await call(h, 'POST', '/v1/sso/issuers/acme/group-mappings', admin, {
      group: 'x',
      organization: 'platform',
      role: 'superuser',
    });
    expect(badRole.status).toBe(422);
    const noOrg = await call(h, 'POST', '/v1/sso/issuers/acme/group-mappings', admin, {
      group: 'x',
      organization: 'nowhere',
      role: 'viewer',
    });
    expect(noOrg.status).toBe(404);
    const methods = await call(h, 'GET', '/v1/auth/methods', null);
    expect(methods.body).toEqual({
      password: true,
      oidc: expect.arrayContaining([{ name: 'acme', display_name: 'Acme ID', start: '/v1/auth/oidc/acme/start' }]),
    });
  });

  it('signs in to the dashboard with the button, creates the user, and the group claim grants the role on the organization', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(base);
      await page.getByRole('link', { name: 'Sign in with Acme ID' }).waitFor();
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'login-with-sso.png') });
      await page.getByRole('link', { name: 'Sign in with Acme ID' }).click();
      await signInAtProvider(page, 'alice');
      await page.getByRole('heading', { name: 'Organizations' }).waitFor();
      await page.getByRole('link', { name: 'Platform' }).waitFor();
      await expect(page.locator('.who').textContent()).resolves.toBe('alice');
    } finally {
      await context.close();
    }
    const alice = await h.ctx.db
      .selectFrom('users')
      .select(['id', 'email', 'is_admin'])
      .where('username', '=', 'alice')
      .executeTakeFirstOrThrow();
    expect(alice).toMatchObject({ email: 'alice@example.com', is_admin: false });
    // `deployer` on Platform: a member, not an admin (the roles of issue 32 refine what a member does).
    const members = (await call(h, 'GET', '/v1/organizations/platform', owner)).body.members as Array<{ username: string; admin: boolean }>;
    expect(members.find((m) => m.username === 'alice')).toMatchObject({ admin: false });
    const row = (await signInRows()).find((r) => r.actor.username === 'alice')!;
    expect(row).toMatchObject({
      denied: false,
      actor: { credential_kind: 'oidc' },
      after: { method: 'oidc', issuer: 'acme', new_user: true },
    });
    expect(row.after.granted).toEqual(['platform-deployers:deployer']);
  });

  it("completes the CLI's browser login through single sign-on", async () => {
    const home = mkdtempSync(join(tmpdir(), 'slipway-sso-cli-'));
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
    const context: BrowserContext = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(url);
      // Signed out: the sign-in page, whose issuer button brings the browser back to this very page.
      await page.getByRole('link', { name: 'Sign in with Acme ID' }).click();
      await signInAtProvider(page, 'bob');
      await page.getByRole('heading', { name: 'Approve a command-line login' }).waitFor();
      await expect(page.getByLabel('Confirmation code').textContent()).resolves.toBe(code);
      await page.getByRole('button', { name: 'Approve' }).click();
      expect(await exited, stderr).toBe(0);
      expect(stdout).toContain('as bob through the browser');
    } finally {
      await context.close();
    }
    const whoami = await slipway(['whoami'], env);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.stdout).toContain('bob');
    rmSync(home, { recursive: true, force: true });
    // bob's group made him an admin of Platform.
    const members = (await call(h, 'GET', '/v1/organizations/platform', owner)).body.members as Array<{ username: string; admin: boolean }>;
    expect(members.find((m) => m.username === 'bob')).toMatchObject({ admin: true });
  });

  it('refuses a tampered or replayed state with 400, audited, and creates nothing', async () => {
    const users = await userCount();
    const start = await call(h, 'GET', '/v1/auth/oidc/acme/start?return_to=/account', null);
    expect(start.status).toBe(302);
    const location = new URL(String(start.headers.location));
    expect(location.origin).toBe(idp.url);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    const state = location.searchParams.get('state')!;
    const cookie = String(start.headers['set-cookie']).split(';')[0]!;
    // Another state than the browser's cookie holds (tampered), and the browser's without its cookie (login CSRF).
    const tampered = await call(h, 'GET', `/v1/auth/oidc/callback?code=x&state=${state}x`, null, {}, { cookie });
    expect(tampered.status).toBe(400);
    expect(tampered.body.message).toMatch(/state does not match/);
    expect((await call(h, 'GET', `/v1/auth/oidc/callback?code=x&state=${state}`, null)).status).toBe(400);
    // The right pair is spent once: a second use is refused.
    const spent = await call(h, 'GET', `/v1/auth/oidc/callback?code=x&state=${state}`, null, {}, { cookie });
    expect(spent.status, spent.raw).toBe(401);
    const replay = await call(h, 'GET', `/v1/auth/oidc/callback?code=x&state=${state}`, null, {}, { cookie });
    expect(replay.status).toBe(400);
    expect(replay.body.message).toMatch(/unknown, used or expired/);
    // An open redirect is not: return_to is only ever a path here.
    const outside = await call(h, 'GET', '/v1/auth/oidc/acme/start?return_to=//evil.example/x', null);
    const row = await h.ctx.db
      .selectFrom('oidc_sign_ins')
      .select('return_to')
      .where('expires_at', '>', new Date())
      .orderBy('expires_at', 'desc')
      .executeTakeFirstOrThrow();
    expect(outside.status).toBe(302);
    expect(row.return_to).toBe('/');
    expect(await userCount()).toBe(users);
    const refusals = (await signInRows()).filter((r) => r.denied);
    expect(refusals.some((r) => r.after.status === 400 && /state does not match/.test(r.after.reason))).toBe(true);
    // The state is a credential while it lasts: the request log names the callback without it.
    expect(h.logs()).toContain('/v1/auth/oidc/callback?code=[redacted]&state=[redacted]');
    expect(h.logs()).not.toContain(state);
  });

  it('refuses an issuer that is down (424), a token for another audience (401) and an e-mail domain not allowed (403), audited, no user made', async () => {
    const users = await userCount();
    const down = await call(h, 'GET', '/v1/auth/oidc/down/start', null);
    expect(down.status).toBe(424);
    expect(down.body.message).toMatch(/identity provider cannot be reached/);

    idp.audienceOverride = 'another-client';
    try {
      const wrongAudience = await signInExpectingRefusal('acme-aud', 'carol');
      expect(wrongAudience.status, wrongAudience.body.message).toBe(401);
      expect(wrongAudience.body.message).toMatch(/aud/);
    } finally {
      idp.audienceOverride = null;
    }

    const domain = await signInExpectingRefusal('acme', 'mallory');
    expect(domain.status).toBe(403);
    expect(domain.body.message).toBe('E-mail addresses of elsewhere.test may not sign in through Acme ID');

    expect(await userCount()).toBe(users);
    const members = (await call(h, 'GET', '/v1/organizations/platform', owner)).body.members as Array<{ username: string }>;
    expect(members.map((m) => m.username)).not.toContain('mallory');
    const refusals = (await signInRows()).filter((r) => r.denied);
    for (const [issuer, status] of [
      ['down', 424],
      ['acme-aud', 401],
      ['acme', 403],
    ] as const)
      expect(
        refusals.some((r) => r.after.issuer === issuer && r.after.status === status),
        `${issuer} ${status}`,
      ).toBe(true);
  });

  it('with password sign-in turned off, the password login is refused and the page offers only single sign-on', async () => {
    h.ctx.config.PASSWORD_LOGIN = false;
    try {
      const login = await call(h, 'POST', '/v1/auth/login', null, { email: owner.email, password: owner.password });
      expect(login.status).toBe(403);
      expect(login.body.message).toMatch(/Password sign-in is turned off/);
      expect((await call(h, 'GET', '/v1/auth/methods', null)).body.password).toBe(false);
      // API keys keep working (the break-glass path goes through one: `npm run admin -- api-keys create`).
      expect((await call(h, 'GET', '/v1/auth/session', owner)).body.authenticated).toBe(true);
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(base);
      await page.getByRole('link', { name: 'Sign in with Acme ID' }).waitFor();
      expect(await page.getByRole('button', { name: 'Log in' }).count()).toBe(0);
      await context.close();
    } finally {
      h.ctx.config.PASSWORD_LOGIN = true;
    }
  });
});

describe.skipIf(missing !== null)('memberships single sign-on granted follow the groups', () => {
  it('lowers or removes them at the next sign-in; a role people chose and the last owner stay', async () => {
    for (const name of ['Tools', 'Solo']) expect((await call(h, 'POST', '/v1/organizations', owner, { name })).status).toBe(201);
    for (const [group, organization, role] of [
      ['tools-devs', 'tools', 'developer'],
      ['solo-owners', 'solo', 'owner'],
    ]) {
      const mapped = await call(h, 'POST', '/v1/sso/issuers/acme/group-mappings', admin, { group, organization, role });
      expect(mapped.status, mapped.raw).toBe(201);
    }
    const roles = async (cookie: string) => {
      const out: Record<string, string | null> = {};
      for (const org of ['platform', 'tools', 'solo']) {
        const detail = await call(h, 'GET', `/v1/organizations/${org}`, null, undefined, { cookie });
        out[org] = detail.status === 200 ? detail.body.members.find((m: { username: string }) => m.username === 'dave').role : null;
      }
      return out;
    };

    ACCOUNTS.dave.groups = ['platform-admins', 'tools-devs', 'solo-owners'];
    let cookie = await signInThrough('dave');
    expect(await roles(cookie)).toEqual({ platform: 'admin', tools: 'developer', solo: 'owner' });
    const dave = (await call(h, 'GET', '/v1/organizations/platform', owner)).body.members.find(
      (m: { username: string }) => m.username === 'dave',
    );
    // People choose dave's role on Tools; Solo's first owner leaves it to dave.
    expect((await call(h, 'PUT', `/v1/organizations/tools/members/${dave.user_id}/role`, owner, { role: 'viewer' })).status).toBe(200);
    expect((await call(h, 'DELETE', `/v1/organizations/solo/members/${owner.id}`, owner)).status).toBe(200);

    ACCOUNTS.dave.groups = ['platform-deployers'];
    cookie = await signInThrough('dave');
    expect(await roles(cookie)).toEqual({ platform: 'deployer', tools: 'viewer', solo: 'owner' });

    ACCOUNTS.dave.groups = [];
    cookie = await signInThrough('dave');
    expect(await roles(cookie)).toEqual({ platform: null, tools: 'viewer', solo: 'owner' });
    const [last] = await signInRows();
    expect(last!.actor.username).toBe('dave');
    expect(last!.after.lowered).toHaveLength(2);
    expect(last!.after.lowered).toEqual(
      expect.arrayContaining([expect.stringMatching(/:removed$/), expect.stringMatching(/:kept-last-owner$/)]),
    );

    // The session remembers how and from where it began.
    const sessions = await call(h, 'GET', '/v1/users/me/sessions', null, undefined, { cookie });
    expect(sessions.body.find((x: { current: boolean }) => x.current)).toMatchObject({
      method: 'oidc',
      address: '127.0.0.1',
      user_agent: expect.stringContaining('Chrome'),
    });
  });
});
