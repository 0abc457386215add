import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { TxtServer } from '../helpers/dns-server.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, NODE_APP, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { basic, decodeJwt } from '../registry/fixtures.js';

/**
 * Issue 27, class 4: references across organizations. Organization B (admin Bob) holds one
 * record of every kind a request can name; organization A has Alice (admin) and Mallory (a
 * plain member). Each row sends B's identifier in a request of A's (as Mallory, or as Alice
 * where only admins reach the route) and expects a refusal; at the end Bob finds every record
 * of B as it was, and nothing of B's reached A.
 */
const HOOK_SECRET = 'cross-org-hook-secret';
const INSTALLATION = 7001;

let h: Harness;
let github: FakeGitHub;
let dns: TxtServer;
let gitRoot: string;
let siteAdmin: TestUser;
let alice: TestUser;
let mallory: TestUser;
let bob: TestUser;
let a: Deployable;
let b: Deployable;
/** B's records, by kind. */
const B = {} as {
  orgId: string;
  projectId: string;
  stagingId: string;
  releaseId: string;
  imageId: string;
  domainId: string;
  pendingDomainId: string;
  webhookId: string;
  configId: string;
  apiKeyId: string;
  state: string;
};

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const api = (user: TestUser | null, method: Method, url: string, payload?: object) =>
  h.app.inject({ method, url, headers: user?.headers ?? {}, ...(payload ? { payload } : {}) });

async function ok(user: TestUser, method: Method, url: string, payload?: object, status = 200) {
  const res = await api(user, method, url, payload);
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
}

/** Everything of B that Bob reads, to compare before and after the attempts. */
async function snapshotOfB() {
  const ws = `/v1/workspaces/${b.slugs.org}`;
  const strip = (list: Array<Record<string, unknown>>) => list.map(({ last_used: _ignored, ...rest }) => rest);
  return {
    installations: await ok(bob, 'GET', `/v1/organizations/${b.slugs.org}/github/installations`),
    settings: await ok(bob, 'GET', `/v1/applications/${b.slugs.org}/${b.slugs.project}/${b.slugs.app}`).then((d) => ({
      installation: d.github_app_installation_id,
      repository: d.github_repository,
    })),
    releases: await ok(bob, 'GET', `/v1/releases/${b.appId}`),
    deployments: await ok(bob, 'GET', `/v1/applications/${b.appId}/deployments`),
    images: await ok(bob, 'GET', `/v1/images/${b.appId}`),
    domains: await ok(bob, 'GET', `/v1/applications/${b.appId}/domains`),
    webhooks: await ok(bob, 'GET', `/v1/organizations/${b.slugs.org}/webhooks`),
    teams: await ok(bob, 'GET', `${ws}/teams`),
    members: await ok(bob, 'GET', `/v1/organizations/${b.slugs.org}`).then((o) => o.members),
    projects: await ok(bob, 'GET', `${ws}/projects`),
    environments: await ok(bob, 'GET', `${ws}/projects/${b.slugs.project}/envs`),
    previews: await ok(bob, 'GET', `${ws}/projects/${b.slugs.project}/previews`).then((p) => p.settings),
    config: await ok(bob, 'GET', `/v1/configurations/${b.appId}/${B.configId}`),
    cron: await ok(bob, 'GET', `/v1/applications/${b.appId}/cron`),
    guard: await ok(bob, 'GET', `/v1/applications/${b.appId}/guard?environment=staging`),
    apiKeys: strip(await ok(bob, 'GET', '/v1/auth/api-keys')),
  };
}

beforeAll(async () => {
  gitRoot = mkdtempSync(join(tmpdir(), 'slipway-cross-org-git-'));
  github = await new FakeGitHub(gitRoot).start();
  github.installations.add(String(INSTALLATION));
  dns = await new TxtServer().start();
  h = await createHarness(
    {
      GITHUB_URL: github.gitUrl,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_APP_ID: github.appId,
      GITHUB_APP_PRIVATE_KEY: github.privateKeyPem,
      GITHUB_APP_SLUG: 'slipway-test',
      GITHUB_APP_CLIENT_ID: github.clientId,
      GITHUB_APP_CLIENT_SECRET: github.clientSecret,
      GITHUB_WEBHOOK_SECRET: HOOK_SECRET,
      DOMAIN_DNS_SERVER: dns.address,
      WEBHOOK_ALLOW_PRIVATE: true,
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
    },
    { jobs: true, runtime: true },
  );
  siteAdmin = await h.user({ admin: true });
  [alice, mallory, bob] = [await h.user(), await h.user(), await h.user()];

  // A: Alice's organization, Mallory a plain member; one release deployed (so a rollback is possible).
  a = await deployableApp(h, alice);
  await ok(alice, 'POST', `/v1/organizations/${a.slugs.org}/members`, { username: mallory.username });
  const aRelease = await a.release({ 'app.js': NODE_APP('a1') }, 'web: node app.js\n');
  const deploy = await ok(alice, 'POST', `/v1/releases/${aRelease}/deploy`, undefined, 202);
  expect((await settled(h, alice, deploy.deployment_id)).error).toBe(false);

  // B: every kind of record a request can name.
  b = await deployableApp(h, bob);
  const ws = `/v1/workspaces/${b.slugs.org}`;
  B.orgId = (await ok(bob, 'GET', `/v1/organizations/${b.slugs.org}`)).id;
  B.projectId = (await ok(bob, 'GET', `/v1/projects/${b.slugs.org}/${b.slugs.project}`)).id;
  B.stagingId = (await ok(bob, 'POST', `${ws}/projects/${b.slugs.project}/envs`, { name: 'Staging' }, 201)).id;
  B.releaseId = await b.release({ 'app.js': '' }, 'web: node app.js\n');
  B.imageId = (await ok(bob, 'GET', `/v1/images/${b.appId}`)).items[0].id;
  // The installation, linked through the App's setup flow: Bob's GitHub user reaches it.
  const started = await ok(bob, 'POST', `/v1/organizations/${b.slugs.org}/github/installations/setup`);
  expect(started.install_url).toBe(`${github.gitUrl}/apps/slipway-test/installations/new?state=${started.state}`);
  B.state = started.state;
  github.userCodes.set('code-bob', [INSTALLATION]);
  const linked = await ok(
    bob,
    'GET',
    `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${B.state}&code=code-bob&setup_action=install`,
  );
  expect(linked).toMatchObject({ organization: b.slugs.org, installation_id: INSTALLATION, linked_via: 'setup' });
  await ok(bob, 'PATCH', `/v1/applications/${b.appId}/settings`, {
    github_repository: 'bob/private',
    github_repository_is_private: true,
    github_app_installation_id: INSTALLATION,
  });
  // A proven domain and a pending one.
  const domain = await ok(bob, 'POST', `/v1/applications/${b.appId}/domains`, { hostname: 'shop.bob.test' }, 201);
  dns.prove('shop.bob.test', domain.verification.token);
  B.domainId = (await ok(bob, 'POST', `/v1/applications/${b.appId}/domains/${domain.id}/verify`)).id;
  B.pendingDomainId = (await ok(bob, 'POST', `/v1/applications/${b.appId}/domains`, { hostname: 'next.bob.test' }, 201)).id;
  B.webhookId = (
    await ok(bob, 'POST', `/v1/organizations/${b.slugs.org}/webhooks`, { url: 'http://127.0.0.1:9/hook', events: ['build.failed'] }, 201)
  ).id;
  await ok(bob, 'POST', `${ws}/teams`, { name: 'Core', members: [bob.username] }, 201);
  B.configId = (await ok(bob, 'POST', `/v1/configurations/${b.appId}`, { name: 'PLAIN', value: 'b-value' }, 201)).id;
  await ok(bob, 'PUT', `${ws}/projects/${b.slugs.project}/previews`, { template_environment: 'staging' });
  await ok(bob, 'PUT', `/v1/applications/${b.appId}/cron/nightly?environment=staging`, { schedule: '@daily', command: 'echo b' });
  await ok(bob, 'PUT', `/v1/applications/${b.appId}/guard`, { environment: 'staging', window_seconds: 60, max_restarts: 3 });
  B.apiKeyId = (await ok(bob, 'POST', '/v1/auth/api-keys', { name: 'ci' }, 201)).id;
}, 180_000);

afterAll(async () => {
  await h?.close();
  await github?.close();
  await dns?.close();
  if (gitRoot) rmSync(gitRoot, { recursive: true, force: true });
});

describe("A's member names B's records", () => {
  let before: Awaited<ReturnType<typeof snapshotOfB>>;
  let aDeploymentsBefore: unknown;

  beforeAll(async () => {
    before = await snapshotOfB();
    aDeploymentsBefore = await ok(alice, 'GET', `/v1/applications/${a.appId}/deployments`);
  });

  /** [what is named, who asks, the request, the status, a fragment of the message]. */
  const rows: Array<[string, () => TestUser, Method, () => string, (() => object) | null, number, string]> = [
    // GitHub App installation
    [
      'installation in application settings',
      () => mallory,
      'PATCH',
      () => `/v1/applications/${a.appId}/settings`,
      () => ({ github_app_installation_id: INSTALLATION }),
      403,
      `installation ${INSTALLATION} is not linked to this organization`,
    ],
    [
      'installation linked by a non-administrator',
      () => alice,
      'PUT',
      () => `/v1/github/installations/${INSTALLATION}`,
      () => ({ organization: a.slugs.org }),
      403,
      'site administrators',
    ],
    [
      "installation unlinked through A's admin route",
      () => alice,
      'DELETE',
      () => `/v1/organizations/${a.slugs.org}/github/installations/${INSTALLATION}`,
      null,
      404,
      `installation ${INSTALLATION} of `,
    ],
    [
      "installation unlinked through B's admin route",
      () => alice,
      'DELETE',
      () => `/v1/organizations/${b.slugs.org}/github/installations/${INSTALLATION}`,
      null,
      403,
      '',
    ],
    [
      "setup state of B's admin replayed by A's member",
      () => mallory,
      'GET',
      () => `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${B.state}&code=x`,
      null,
      403,
      'started by another user',
    ],
    [
      'setup started by a plain member',
      () => mallory,
      'POST',
      () => `/v1/organizations/${a.slugs.org}/github/installations/setup`,
      null,
      403,
      'Only organization admins',
    ],
    // Releases, images, environments
    [
      'release id in a rollback body',
      () => mallory,
      'POST',
      () => `/v1/applications/${a.appId}/rollback`,
      () => ({ release_id: B.releaseId }),
      404,
      'Release not found',
    ],
    ['release id deployed by path', () => mallory, 'POST', () => `/v1/releases/${B.releaseId}/deploy`, null, 403, ''],
    ['release detail', () => mallory, 'GET', () => `/v1/releases/${B.releaseId}/detail`, null, 403, ''],
    ["release made from B's latest image", () => mallory, 'POST', () => `/v1/releases/${b.appId}/create`, null, 403, ''],
    ['image detail', () => mallory, 'GET', () => `/v1/images/${B.imageId}/detail`, null, 403, ''],
    ['image build', () => mallory, 'POST', () => `/v1/images/${b.appId}/build`, null, 403, ''],
    [
      'environment id in a rollback body',
      () => mallory,
      'POST',
      () => `/v1/applications/${a.appId}/rollback`,
      () => ({ environment: b.envId }),
      404,
      'Environment',
    ], // its id names nothing in A's project,
    [
      'environment id in a one-off run',
      () => mallory,
      'POST',
      () => `/v1/applications/${a.appId}/runs`,
      () => ({ command: 'id', environment: B.stagingId }),
      404,
      'not found',
    ],
    [
      'environment id in a guard',
      () => mallory,
      'PUT',
      () => `/v1/applications/${a.appId}/guard`,
      () => ({ environment: B.stagingId, max_restarts: 1 }),
      404,
      'not found',
    ],
    [
      'environment id in a log query',
      () => mallory,
      'GET',
      () => `/v1/applications/${a.appId}/logs?environment=${b.envId}`,
      null,
      404,
      'not found',
    ],
    [
      'environment slug of B only in a release list',
      () => mallory,
      'GET',
      () => `/v1/releases/${a.appId}?environment=staging`,
      null,
      404,
      'not found',
    ],
    [
      'environment slug in a cron entry',
      () => mallory,
      'PUT',
      () => `/v1/applications/${a.appId}/cron/nightly?environment=staging`,
      () => ({ schedule: '@daily', command: 'id' }),
      404,
      'not found',
    ],
    [
      'environment slug in an autoscaling list',
      () => mallory,
      'GET',
      () => `/v1/applications/${a.appId}/autoscaling?environment=staging`,
      null,
      404,
      'not found',
    ],
    [
      'environment slug as a promotion source',
      () => mallory,
      'POST',
      () => `/v1/workspaces/${a.slugs.org}/projects/${a.slugs.project}/envs/production/promote`,
      () => ({ from: 'staging' }),
      404,
      'not found',
    ],
    [
      'environment slug as the preview template',
      () => alice,
      'PUT',
      () => `/v1/workspaces/${a.slugs.org}/projects/${a.slugs.project}/previews`,
      () => ({ template_environment: 'staging' }),
      422,
      'no environment',
    ],
    [
      'environment of B by its own path',
      () => mallory,
      'PATCH',
      () => `/v1/workspaces/${b.slugs.org}/projects/${b.slugs.project}/envs/staging`,
      () => ({ name: 'Mine' }),
      403,
      '',
    ],
    // Domains
    [
      'domain id under an application of A',
      () => mallory,
      'GET',
      () => `/v1/applications/${a.appId}/domains/${B.domainId}`,
      null,
      404,
      'Domain not found',
    ],
    [
      'domain id verified under an application of A',
      () => mallory,
      'POST',
      () => `/v1/applications/${a.appId}/domains/${B.pendingDomainId}/verify`,
      null,
      404,
      'Domain not found',
    ],
    [
      'domain id removed under an application of A',
      () => mallory,
      'DELETE',
      () => `/v1/applications/${a.appId}/domains/${B.domainId}`,
      null,
      404,
      'Domain not found',
    ],
    [
      "B's proven host name claimed",
      () => mallory,
      'POST',
      () => `/v1/applications/${a.appId}/domains`,
      () => ({ hostname: 'shop.bob.test' }),
      409,
      'already claimed and proven',
    ],
    // Webhooks (an admin route: asked by A's admin)
    [
      "webhook id under A's organization",
      () => alice,
      'GET',
      () => `/v1/organizations/${a.slugs.org}/webhooks/${B.webhookId}`,
      null,
      404,
      'not found',
    ],
    [
      "webhook id removed under A's organization",
      () => alice,
      'DELETE',
      () => `/v1/organizations/${a.slugs.org}/webhooks/${B.webhookId}`,
      null,
      404,
      'not found',
    ],
    [
      "webhook deliveries under A's organization",
      () => alice,
      'GET',
      () => `/v1/organizations/${a.slugs.org}/webhooks/${B.webhookId}/deliveries`,
      null,
      404,
      'not found',
    ],
    // Teams and memberships
    [
      "team slug of B for A's project",
      () => alice,
      'PATCH',
      () => `/v1/workspaces/${a.slugs.org}/projects/${a.slugs.project}`,
      () => ({ team: 'core' }),
      404,
      'not found',
    ],
    [
      "B's admin put in a team of A",
      () => alice,
      'POST',
      () => `/v1/workspaces/${a.slugs.org}/teams`,
      () => ({ name: 'Mine', members: [bob.username] }),
      422,
      'is not a member of this workspace',
    ],
    [
      "B's admin removed from B's team",
      () => mallory,
      'DELETE',
      () => `/v1/workspaces/${b.slugs.org}/teams/core/members/${bob.id}`,
      null,
      403,
      '',
    ],
    [
      "B's admin removed from A's members",
      () => alice,
      'DELETE',
      () => `/v1/organizations/${a.slugs.org}/members/${bob.id}`,
      null,
      404,
      'not found',
    ],
    [
      "B's admin made an admin of A",
      () => alice,
      'POST',
      () => `/v1/organizations/${a.slugs.org}/members/${bob.id}/toggle-admin`,
      null,
      404,
      'not found',
    ],
    // Projects and applications
    [
      'organization id in a project body',
      () => mallory,
      'POST',
      () => '/v1/projects',
      () => ({ name: 'Mine', organization_id: B.orgId }),
      403,
      '',
    ],
    [
      'project id in an application body',
      () => mallory,
      'POST',
      () => '/v1/applications',
      () => ({ name: 'Mine', project_id: B.projectId }),
      403,
      '',
    ],
    [
      "B's application settings",
      () => mallory,
      'PATCH',
      () => `/v1/applications/${b.appId}/settings`,
      () => ({ github_repository: 'mallory/x' }),
      403,
      '',
    ],
    // Configuration, cron, guards, API keys
    [
      'configuration id under an application of A',
      () => mallory,
      'GET',
      () => `/v1/configurations/${a.appId}/${B.configId}`,
      null,
      404,
      'not found',
    ],
    [
      'configuration id changed under an application of A',
      () => mallory,
      'PATCH',
      () => `/v1/configurations/${a.appId}/${B.configId}`,
      () => ({ value: 'mallory' }),
      404,
      'not found',
    ],
    [
      'configuration id removed under an application of A',
      () => mallory,
      'DELETE',
      () => `/v1/configurations/${a.appId}/${B.configId}`,
      null,
      404,
      'not found',
    ],
    [
      "B's cron entry removed",
      () => mallory,
      'DELETE',
      () => `/v1/applications/${b.appId}/cron/nightly?environment=staging`,
      null,
      403,
      '',
    ],
    ["B's guard removed", () => mallory, 'DELETE', () => `/v1/applications/${b.appId}/guard?environment=staging`, null, 403, ''],
    ["B's admin's API key revoked", () => mallory, 'DELETE', () => `/v1/auth/api-keys/${B.apiKeyId}`, null, 404, 'not found'],
  ];

  it.each(rows)('%s: refused', async (_what, who, method, url, body, status, message) => {
    const res = await api(who(), method, url(), body?.() ?? undefined);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json().message).toContain(message);
  });

  it("B's registry repository grants A's member nothing", async () => {
    const name = `${b.slugs.org}/${b.slugs.project}/${b.slugs.app}`;
    const res = await h.app.inject({
      method: 'GET',
      url: `/v1/integrations/docker/auth?service=slipway-registry&scope=repository:${name}:pull,push,delete`,
      headers: { authorization: basic(mallory.username, mallory.apiKey) },
    });
    expect(res.statusCode).toBe(200);
    expect(decodeJwt(res.json().token).claims.access).toEqual([{ type: 'repository', name, actions: [] }]);
  });

  it("a spoofed installation id on A's own setup is refused: GitHub does not list it for A's admin", async () => {
    const started = await ok(alice, 'POST', `/v1/organizations/${a.slugs.org}/github/installations/setup`);
    github.userCodes.set('code-alice', [8002]);
    const res = await api(
      alice,
      'GET',
      `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${started.state}&code=code-alice`,
    );
    expect(res.statusCode).toBe(403);
    expect(res.json().message).toContain(`does not list installation ${INSTALLATION}`);
    // Without a code GitHub confirmed nothing; a forged state is not the platform's.
    const noCode = await api(alice, 'GET', `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${started.state}`);
    expect(noCode.statusCode).toBe(403);
    const forged = Buffer.from(
      JSON.stringify({
        p: 'github-app-setup',
        o: (await ok(alice, 'GET', `/v1/organizations/${a.slugs.org}`)).id,
        u: alice.id,
        e: Date.now() + 60_000,
      }),
    ).toString('base64url');
    const refused = await api(alice, 'GET', `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${forged}&code=x`);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toContain('setup state is not valid');
    // Even a GitHub user who reaches it cannot move it: it is B's.
    github.userCodes.set('code-alice-2', [INSTALLATION]);
    const taken = await api(
      alice,
      'GET',
      `/v1/integrations/github/setup?installation_id=${INSTALLATION}&state=${started.state}&code=code-alice-2`,
    );
    expect(taken.statusCode).toBe(409);
    expect(taken.json().message).toContain('linked to another organization');
  });

  it("leaves every record of B as it was, and gives A nothing of B's", async () => {
    expect(await snapshotOfB()).toEqual(before);
    expect(await ok(alice, 'GET', `/v1/organizations/${a.slugs.org}/github/installations`)).toEqual([]);
    const aApp = await ok(mallory, 'GET', `/v1/applications/${a.slugs.org}/${a.slugs.project}/${a.slugs.app}`);
    expect(aApp.github_app_installation_id).toBeNull();
    expect(await ok(alice, 'GET', `/v1/applications/${a.appId}/deployments`)).toEqual(aDeploymentsBefore);
    expect((await ok(alice, 'GET', `/v1/applications/${a.appId}/domains`)).map((d: { hostname: string }) => d.hostname)).toEqual([]);
    expect(await ok(alice, 'GET', `/v1/workspaces/${a.slugs.org}/teams`)).toEqual([]);
    expect((await ok(alice, 'GET', `/v1/workspaces/${a.slugs.org}/projects`)).length).toBe(1);
    expect(github.issued).toEqual([]);
  });
});

describe("B's installation named by GitHub itself for A's service", () => {
  it("a pull request hook carrying B's installation posts no status for A's preview of the same repository", async () => {
    // B's own previews off, so only A's service builds from the pull request.
    expect((await api(bob, 'DELETE', `/v1/workspaces/${b.slugs.org}/projects/${b.slugs.project}/previews`)).statusCode).toBe(204);
    await ok(mallory, 'PATCH', `/v1/applications/${a.appId}/settings`, { github_repository: 'bob/private' });
    await ok(alice, 'PUT', `/v1/workspaces/${a.slugs.org}/projects/${a.slugs.project}/previews`, { template_environment: 'production' });
    const sha = 'b'.repeat(40);
    const imagesBefore = new Set((await ok(alice, 'GET', `/v1/images/${a.appId}`)).items.map((i: { id: string }) => i.id));
    const body = Buffer.from(
      JSON.stringify({
        action: 'opened',
        number: 7,
        pull_request: { number: 7, head: { sha, ref: 'feature-7' } },
        repository: { full_name: 'bob/private' },
        installation: { id: INSTALLATION },
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
    // A's preview build (the repository is not A's to clone) fails; its chain started and settled meanwhile.
    const failed = await waitFor(
      "A's preview build to fail",
      async () => {
        const images = (await ok(alice, 'GET', `/v1/images/${a.appId}`)).items as Array<{ id: string }>;
        const [newest] = images.filter((i) => !imagesBefore.has(i.id));
        if (!newest) return null;
        const log = await ok(alice, 'GET', `/v1/images/${newest.id}/log`);
        return log.status === 'building' ? null : log;
      },
      60_000,
      200,
    );
    expect(failed.status).not.toBe('built');
    await new Promise((r) => setTimeout(r, 1000));
    expect(github.statuses.filter((s) => s.repository === 'bob/private')).toEqual([]);
    expect(github.issued).toEqual([]);
  });
});

describe('an installation is checked again where it is used', () => {
  it('once unlinked, a build request is 403 and a build a push started fails before any token is minted', async () => {
    await ok(bob, 'DELETE', `/v1/organizations/${b.slugs.org}/github/installations/${INSTALLATION}`);
    const asked = await api(bob, 'POST', `/v1/images/${b.appId}/build`);
    expect(asked.statusCode).toBe(403);
    expect(asked.json().message).toContain(`installation ${INSTALLATION} is not linked to this organization`);
    // A push (signed by GitHub) starts the chain without a caller: the build itself refuses.
    await ok(bob, 'PATCH', `/v1/applications/${b.appId}/settings`, { auto_deploy_branch: 'main' });
    const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: 'a'.repeat(40), repository: { full_name: 'bob/private' } }));
    const hook = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: body,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': signBody(HOOK_SECRET, body),
      },
    });
    expect(hook.statusCode, hook.body).toBe(200);
    const failed = await waitFor(
      'the pushed build to fail',
      async () => {
        const [latest] = (await ok(bob, 'GET', `/v1/images/${b.appId}`)).items.filter((i: { id: string }) => i.id !== B.imageId);
        if (!latest) return null;
        const log = await ok(bob, 'GET', `/v1/images/${latest.id}/log`);
        return log.status === 'building' ? null : log;
      },
      60_000,
      200,
    );
    expect(failed.error_detail).toContain(`installation ${INSTALLATION} is not linked to this organization`);
    expect(github.issued).toEqual([]);
  });

  it('a site administrator moves it to A: A may use it, B no longer can', async () => {
    const moved = await ok(siteAdmin, 'PUT', `/v1/github/installations/${INSTALLATION}`, { organization: a.slugs.org });
    expect(moved).toMatchObject({ organization: a.slugs.org, installation_id: INSTALLATION, linked_via: 'admin' });
    const set = await ok(mallory, 'PATCH', `/v1/applications/${a.appId}/settings`, { github_app_installation_id: INSTALLATION });
    expect(set.github_app_installation_id).toBe(INSTALLATION);
    expect((await api(bob, 'POST', `/v1/images/${b.appId}/build`)).statusCode).toBe(403);
    expect(await ok(bob, 'GET', `/v1/organizations/${b.slugs.org}/github/installations`)).toEqual([]);
  });
});
