import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';

/**
 * Issue 27, second adversarial review: variants of class 4 the first cross-organization test
 * did not try. GitHub's hooks are signed with the site's one secret and name a repository, not
 * an organization: a member of A who points A's application at B's private repository must not
 * receive B's pushes and pull requests (their commits, branches and numbers), nor builds of them.
 */
const SECRET = 'review-2-hook-secret';
const INSTALLATION = 8101;
const B_SHA = 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0';

let h: Harness;
let githubRoot: string;
let victim: TestApp;
let attacker: TestApp;
let base: string;
let github: FakeGitHub;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
async function ok(user: TestUser, method: Method, url: string, payload?: object, status = 200) {
  const res = await h.app.inject({ method, url, headers: user.headers, ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
}

function deliver(event: string, payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  return h.app.inject({
    method: 'POST',
    url: '/v1/integrations/github/hooks',
    payload: body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': `d-${Math.random()}`,
      'x-hub-signature-256': signBody(SECRET, body),
    },
  });
}

/** What GitHub sends about B's private repository, from B's installation of the App. */
const privateRepository = {
  full_name: 'bob/private',
  private: true,
  clone_url: 'https://github.com/bob/private.git',
  ssh_url: 'git@github.com:bob/private.git',
  html_url: 'https://github.com/bob/private',
};

beforeAll(async () => {
  // No repository exists here: the builds these hooks start fail at the clone, quickly.
  githubRoot = mkdtempSync(join(tmpdir(), 'slipway-review2-github-'));
  github = await new FakeGitHub(githubRoot).start();
  github.installations.add(String(INSTALLATION));
  h = await createHarness(
    {
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_URL: github.gitUrl,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_APP_ID: github.appId,
      GITHUB_APP_PRIVATE_KEY: github.privateKeyPem,
      GITHUB_APP_SLUG: 'slipway-test',
      GITHUB_APP_CLIENT_ID: github.clientId,
      GITHUB_APP_CLIENT_SECRET: github.clientSecret,
    },
    { jobs: true },
  );
  // B: its private repository through its own linked installation.
  victim = await createApp(h, {
    github_repository: 'bob/private',
    github_repository_is_private: true,
    github_app_installation_id: INSTALLATION,
    auto_deploy_branch: 'main',
  });
  // A: a plain member names B's repository (a name is all it takes) with the same branch.
  attacker = await createApp(h, { github_repository: 'bob/private', auto_deploy_branch: 'main' });
  base = await h.app.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);

afterAll(async () => {
  await h?.close();
  github?.close();
  if (githubRoot) rmSync(githubRoot, { recursive: true, force: true });
});

describe('GitHub hooks about a private repository reach only the organization its installation is linked to', () => {
  it("B's push to its private repository builds B's application, never A's that names the same repository", async () => {
    const res = await deliver('push', {
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after: B_SHA,
      deleted: false,
      repository: privateRepository,
      installation: { id: INSTALLATION },
    });
    expect(res.statusCode, res.body).toBe(200);
    // B's own application is started (the hook was acted on)…
    await waitFor("B's image", async () => (await ok(victim.user, 'GET', `/v1/images/${victim.appId}`)).items.length === 1, 20_000);
    // …and A received nothing: no image, so no commit of B's, no build of B's code.
    expect((await ok(attacker.user, 'GET', `/v1/images/${attacker.appId}`)).items).toEqual([]);
  });

  it("B's pull request opens no preview in A's project that names the same repository", async () => {
    const ws = `/v1/workspaces/${attacker.orgSlug}/projects/shop`;
    await ok(attacker.user, 'POST', `${ws}/envs`, { name: 'Staging' }, 201);
    await ok(attacker.user, 'PUT', `${ws}/previews`, { template_environment: 'staging' });
    const res = await deliver('pull_request', {
      action: 'opened',
      number: 42,
      pull_request: { number: 42, head: { sha: B_SHA } },
      repository: privateRepository,
      installation: { id: INSTALLATION },
    });
    expect(res.statusCode, res.body).toBe(200);
    const envs = (await ok(attacker.user, 'GET', `${ws}/envs`)) as { items?: Array<{ slug: string }> } | Array<{ slug: string }>;
    const slugs = (Array.isArray(envs) ? envs : (envs.items ?? [])).map((e) => e.slug);
    expect(slugs).not.toContain('pr-42');
    expect((await ok(attacker.user, 'GET', `/v1/images/${attacker.appId}`)).items).toEqual([]);
  });
});

describe('an open stream ends when its reader loses access', () => {
  it("a member removed from B stops receiving B's application events and logs over streams opened before", async () => {
    const member = await h.user();
    await ok(victim.user, 'POST', `/v1/organizations/${victim.orgSlug}/members`, { username: member.username });
    const events = await openSse(`${base}/v1/applications/${victim.appId}/events`, member.headers);
    const logs = await openSse(`${base}/v1/applications/${victim.appId}/logs/stream`, member.headers);
    expect([events.status, logs.status]).toEqual([200, 200]);
    let ended = 0;
    void events.ended.then(() => ended++);
    void logs.ended.then(() => ended++);
    await ok(victim.user, 'DELETE', `/v1/organizations/${victim.orgSlug}/members/${member.id}`);
    // Before: both streams stayed open for as long as the client kept them, serving every new event and line.
    await waitFor('both streams to end', () => ended === 2, 20_000);
  }, 30_000);

  it('a stream opened with an API key ends when that key is deleted', async () => {
    const created = await ok(victim.user, 'POST', '/v1/auth/api-keys', { name: 'laptop' }, 201);
    const events = await openSse(`${base}/v1/applications/${victim.appId}/events`, { 'x-api-key': created.key });
    expect(events.status).toBe(200);
    let ended = false;
    void events.ended.then(() => (ended = true));
    await ok(victim.user, 'DELETE', `/v1/auth/api-keys/${created.id}`);
    // Before: the stream went on with the deleted key.
    await waitFor('the stream to end', () => ended, 20_000);
  }, 30_000);
});

describe("the App's setup flow links an installation only for a GitHub admin of the installation's account", () => {
  const FOREIGN = 8202;

  it("an admin of A who can merely read a repository of B's GitHub organization cannot link B's installation to A", async () => {
    const started = await ok(attacker.user, 'POST', `/v1/organizations/${attacker.orgSlug}/github/installations/setup`);
    // GitHub lists an installation to every user who can read one of its repositories.
    github.readerCodes.set('code-reader', [FOREIGN]);
    const res = await h.app.inject({
      method: 'GET',
      url: `/v1/integrations/github/setup?installation_id=${FOREIGN}&state=${started.state}&code=code-reader&setup_action=update`,
      headers: attacker.user.headers,
    });
    // Before: 200, the installation (every repository it covers) linked to A.
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().message).toContain(`does not list installation ${FOREIGN}`);
    expect(await ok(attacker.user, 'GET', `/v1/organizations/${attacker.orgSlug}/github/installations`)).toEqual([]);
  });

  it("an admin of the installation's GitHub organization links it", async () => {
    const started = await ok(attacker.user, 'POST', `/v1/organizations/${attacker.orgSlug}/github/installations/setup`);
    github.userCodes.set('code-admin', [FOREIGN]);
    const linked = await ok(
      attacker.user,
      'GET',
      `/v1/integrations/github/setup?installation_id=${FOREIGN}&state=${started.state}&code=code-admin&setup_action=install`,
    );
    expect(linked).toMatchObject({ organization: attacker.orgSlug, installation_id: FOREIGN, linked_via: 'setup' });
  });
});

describe('refusals flooded from many addresses do not push members out of the audit', () => {
  it("a member's refused request is recorded after anonymous refusals from 650 addresses in the same minute", async () => {
    const admin = await h.user({ admin: true });
    const member = await h.user();
    await ok(victim.user, 'POST', `/v1/organizations/${victim.orgSlug}/members`, { username: member.username });
    // One IPv6 prefix holds billions of addresses: each refused hook was a new row until the minute's cap.
    for (let i = 0; i < 650; i++) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/integrations/github/hooks',
        remoteAddress: `2001:db8::${(i + 1).toString(16)}`,
        payload: '{}',
        headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=00' },
      });
      expect(res.statusCode).toBe(403);
    }
    const probe = await h.app.inject({
      method: 'GET',
      url: `/v1/organizations/${victim.orgSlug}/audit-log`,
      headers: member.headers,
    });
    expect(probe.statusCode).toBe(403);
    const entries = (await ok(admin, 'GET', `/v1/audit-log?per_page=100&actor=${member.id}`)).items as Array<{
      denied: boolean;
      action: string;
    }>;
    // Before: nothing (the minute's 600 rows were spent by the flood; the member's refusal was only counted).
    expect(entries.filter((e) => e.denied).map((e) => e.action)).toEqual(['GET /v1/organizations/:org_slug/audit-log']);
    // The flood itself stays visible: past its budget, one row per route counts the other addresses.
    const anonymous = (
      await ok(admin, 'GET', `/v1/audit-log?per_page=100&action=${encodeURIComponent('POST /v1/integrations/github/hooks')}`)
    ).items as Array<{
      after: { aggregated?: string; repeated?: number } | null;
    }>;
    expect(anonymous.some((e) => e.after?.aggregated === 'addresses')).toBe(true);
  }, 120_000);
});

describe('login limits per IPv6 /64, not per address', () => {
  it('failures on 20 accounts from 20 addresses of one /64 limit the next account from a 21st address of it', async () => {
    const login = (i: number, address: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/auth/login',
        remoteAddress: address,
        payload: { email: `stuffed-${i}@example.com`, password: 'guess' },
      });
    // LOGIN_ADDRESS_MAX_ACCOUNTS is 20 by default.
    for (let i = 0; i < 20; i++) expect((await login(i, `2001:db8:7:7::${(i + 1).toString(16)}`)).statusCode).toBe(401);
    // Before: 401 (a fresh address of the same /64 started from nothing).
    const next = await login(20, '2001:db8:7:7:ffff::1');
    expect(next.statusCode, next.body).toBe(429);
    // Another subscriber's /64 is not limited by it.
    expect((await login(21, '2001:db8:7:8::1')).statusCode).toBe(401);
  });
});
