import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { sweepDeletedEnvironments } from '../../src/modules/environments/index.js';
import { FakeGitHub } from '../helpers/fake-github.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 16, preview environments, end to end: signed `pull_request` hooks against real
 * PostgreSQL, the real pipeline and the local runtime; the preview is read through the router;
 * a stand-in GitHub API records the commit statuses.
 */
const SECRET = 'hook-secret-previews';
const TEMPLATE_SECRET = 'template-db-pass-3f9a1c';
const PERSONAL_TOKEN = `ghp_${randomUUID().replace(/-/g, '')}`;
const server = (version: string) => pythonHttpApp(`f"{os.environ.get('ENV_LABEL')} ${version} {os.environ.get('DB_PASSWORD')}"`);

let h: Harness;
let github: FakeGitHub;
let alice: TestUser; // workspace admin
let carol: TestUser; // member
let repo: TestRepo;
let appId: string;
const shas: string[] = [];
const P = '/workspaces/acme/projects/shop';
const REPOSITORY = 'acme/shop-web';

const call = (user: TestUser, method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

const viaRouter = (host: string) => routerGet(localRuntime(h.ctx).router.port, host);

/** A signed `pull_request` delivery, as GitHub sends it. */
async function pullRequest(action: string, number: number, sha: string) {
  const body = Buffer.from(
    JSON.stringify({
      action,
      number,
      // A branch of the repository itself (same_repository): the template's configuration applies.
      pull_request: { number, head: { sha, ref: `feature-${number}`, repo: { full_name: REPOSITORY } } },
      repository: { full_name: REPOSITORY, clone_url: repo.dir },
    }),
  );
  const res = await h.app.inject({
    method: 'POST',
    url: '/v1/integrations/github/hooks',
    payload: body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signBody(SECRET, body),
    },
  });
  expect(res.statusCode).toBe(200);
  const hook = await h.ctx.db.selectFrom('github_hooks').select('triggered').where('id', '=', res.json().hook_id).executeTakeFirstOrThrow();
  return hook.triggered as Array<Record<string, unknown>>;
}

/** Waits until the host answers through the router with `body`. */
const answers = (host: string, body: string) =>
  waitFor(
    `${host} answering "${body}"`,
    async () => {
      const r = await viaRouter(host).catch(() => null);
      return r?.status === 200 && r.body === body ? r : null;
    },
    180_000,
    250,
  );

const statusesOf = (sha: string) => github.statuses.filter((s) => s.sha === sha).map((s) => s.state);

beforeAll(async () => {
  github = await new FakeGitHub(process.cwd()).start();
  github.personalTokens.add(PERSONAL_TOKEN);
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      PIPELINE_CONCURRENCY: 4,
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_TOKEN: PERSONAL_TOKEN,
    },
    { jobs: true, runtime: true },
  );
  [alice, carol] = [await h.user(), await h.user()];
  repo = new TestRepo('slipway-preview-repo-');
  shas.push(repo.commit({ 'server.py': server('v1'), Procfile: 'web: python3 server.py\n' }, 'v1'));

  const ws = (await call(alice, 'POST', '/workspaces', { name: 'Acme' })).json();
  await call(alice, 'POST', '/workspaces/acme/members', { username: carol.username });
  const project = (await call(alice, 'POST', '/projects', { name: 'Shop', organization_id: ws.id })).json();
  appId = (await call(alice, 'POST', '/applications', { name: 'web', project_id: project.id })).json().id;
  const settings = await call(alice, 'PATCH', `/applications/${appId}/settings`, {
    github_repository: repo.dir,
    auto_deploy_branch: 'main',
    deployment_timeout: 60,
  });
  expect(settings.statusCode).toBe(200);
  expect((await call(alice, 'POST', `${P}/envs`, { name: 'staging' })).statusCode).toBe(201);
  await call(alice, 'POST', `${P}/envs/staging/config`, { name: 'ENV_LABEL', value: 'from-template' });
  await call(alice, 'POST', `${P}/envs/staging/config`, { name: 'DB_PASSWORD', value: TEMPLATE_SECRET, secret: true });
  await call(alice, 'POST', `${P}/envs/production/config`, { name: 'ENV_LABEL', value: 'production' });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await github?.close();
  repo?.remove();
});

describe('preview settings', () => {
  it('turns previews on with a template environment; bad input is a clear 4xx that changes nothing', async () => {
    expect((await call(carol, 'GET', `${P}/previews`)).json()).toEqual({
      settings: { enabled: false, template_environment: null, max_concurrent: null, copy_secrets: false },
      previews: [],
    });
    const missing = await call(carol, 'PUT', `${P}/previews`, { template_environment: 'nope' });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().message).toContain("no environment 'nope'");
    expect((await call(carol, 'PUT', `${P}/previews`, { template_environment: 'staging', max_concurrent: 0 })).statusCode).toBe(422);
    // Copying the template's secrets into every pull request is an admin's choice.
    expect((await call(carol, 'PUT', `${P}/previews`, { template_environment: 'staging', copy_secrets: true })).statusCode).toBe(403);
    expect((await call(carol, 'GET', `${P}/previews`)).json().settings.enabled).toBe(false);

    const on = await call(carol, 'PUT', `${P}/previews`, { template_environment: 'staging', max_concurrent: 1 });
    expect(on.statusCode).toBe(200);
    expect(on.json().settings).toEqual({ enabled: true, template_environment: 'staging', max_concurrent: 1, copy_secrets: false });
    const outsider = await h.user();
    expect((await call(outsider, 'GET', `${P}/previews`)).statusCode).toBe(403);
  });
});

describe('a pull request gets a preview environment', () => {
  it('opened: pr-7 is created from the template, built at the head and answers at its URL; GitHub gets pending then success', async () => {
    const triggered = await pullRequest('opened', 7, shas[0]!);
    expect(triggered).toMatchObject([{ environment: 'pr-7', created: true, stopped: [] }]);

    // The template's configuration, without its secret (copy_secrets is off).
    await answers('web.pr-7.shop.acme.localhost', 'from-template v1 None');
    const env = await call(carol, 'GET', `${P}/envs/pr-7`);
    expect(env.json()).toMatchObject({ slug: 'pr-7', env_type: 'preview', protected: false });
    const config = await call(carol, 'GET', `${P}/envs/pr-7/services/web/config`);
    expect(config.json().variables.map((v: { name: string }) => v.name)).toEqual(['ENV_LABEL']);
    // Production was not touched.
    expect((await viaRouter('web.shop.acme.localhost')).status).toBe(404);

    await waitFor('success status for v1', () => statusesOf(shas[0]!).includes('success'));
    expect(statusesOf(shas[0]!)).toEqual(['pending', 'success']);
    const success = github.statuses.find((s) => s.sha === shas[0] && s.state === 'success')!;
    expect(success).toMatchObject({ repository: REPOSITORY, context: 'slipway/preview/web' });
    expect(success.target_url).toBe(`http://web.pr-7.shop.acme.localhost:${localRuntime(h.ctx).router.port}`);

    const list = (await call(carol, 'GET', `${P}/previews`)).json();
    expect(list.previews).toMatchObject([
      { environment: 'pr-7', pr_number: 7, repository: REPOSITORY, head_sha: shas[0], stopped: false, urls: { web: success.target_url } },
    ]);
    const events = await h.ctx.db.selectFrom('application_events').select(['kind', 'data']).where('kind', 'like', 'preview.%').execute();
    expect(events).toMatchObject([{ kind: 'preview.created', data: { environment: 'pr-7', pr_number: 7 } }]);
  });

  it('synchronize: redeploys the preview with the new head commit', async () => {
    shas.push(repo.commit({ 'server.py': server('v2') }, 'v2'));
    const triggered = await pullRequest('synchronize', 7, shas[1]!);
    expect(triggered).toMatchObject([{ environment: 'pr-7', created: false }]);
    await answers('web.pr-7.shop.acme.localhost', 'from-template v2 None');
    await waitFor('success status for v2', () => statusesOf(shas[1]!).includes('success'));
    expect(statusesOf(shas[1]!)).toEqual(['pending', 'success']);
    const images = await h.ctx.db
      .selectFrom('images')
      .select('commit_sha')
      .where('application_id', '=', appId)
      .orderBy('version')
      .execute();
    expect(images.map((i) => i.commit_sha)).toEqual([shas[0], shas[1]]);
  });

  it('past the cap, the least recently active preview stops; its next push starts it again', async () => {
    const triggered = await pullRequest('opened', 8, shas[1]!);
    expect(triggered).toMatchObject([{ environment: 'pr-8', created: true, stopped: ['pr-7'] }]);
    await answers('web.pr-8.shop.acme.localhost', 'from-template v2 None');
    await waitFor('pr-7 stopped', async () => (await viaRouter('web.pr-7.shop.acme.localhost')).status === 404);
    const list = (await call(carol, 'GET', `${P}/previews`)).json().previews;
    expect(list.map((p: { environment: string; stopped: boolean }) => [p.environment, p.stopped])).toEqual([
      ['pr-8', false],
      ['pr-7', true],
    ]);
  });

  it('closed: stops the preview and deletes its environment; its records stay readable', async () => {
    const triggered = await pullRequest('closed', 8, shas[1]!);
    expect(triggered).toMatchObject([{ environment: 'pr-8', deleted: true }]);
    await waitFor('pr-8 no longer answers', async () => (await viaRouter('web.pr-8.shop.acme.localhost')).status === 404);
    expect((await call(carol, 'GET', `${P}/envs/pr-8`)).statusCode).toBe(404);
    expect((await call(carol, 'GET', `${P}/envs`)).json().map((e: { slug: string }) => e.slug)).not.toContain('pr-8');
    expect((await call(carol, 'GET', `${P}/previews`)).json().previews.map((p: { environment: string }) => p.environment)).toEqual([
      'pr-7',
    ]);
    // Its deployments are still listed (until PREVIEW_RETENTION_HOURS).
    const deployments = await call(carol, 'GET', `/applications/${appId}/deployments?environment=pr-8`);
    expect(deployments.statusCode).toBe(200);
    expect(deployments.json().items.length).toBeGreaterThan(0);
    const events = await h.ctx.db.selectFrom('application_events').select('kind').where('kind', '=', 'preview.deleted').execute();
    expect(events).toHaveLength(1);
    // No preview ever received the template's secret, nor does any status or log carry it.
    expect(h.logs()).not.toContain(TEMPLATE_SECRET);
    expect(JSON.stringify(github.statuses)).not.toContain(TEMPLATE_SECRET);
  });

  it('a hook for a repository no service builds from, or a pull request action that does not deploy, does nothing', async () => {
    expect(await pullRequest('labeled', 7, shas[1]!)).toEqual([]);
    const before = await h.ctx.db.selectFrom('environments').select('id').execute();
    const body = Buffer.from(
      JSON.stringify({ action: 'opened', number: 9, pull_request: { head: { sha: shas[1] } }, repository: { full_name: 'other/repo' } }),
    );
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/integrations/github/hooks',
      payload: body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-hub-signature-256': signBody(SECRET, body) },
    });
    expect(res.statusCode).toBe(200);
    expect(await h.ctx.db.selectFrom('environments').select('id').execute()).toEqual(before);
  });
});

describe('DELETE an environment', () => {
  it('refuses production and the preview template; a protected one needs an admin; deletion stops what it runs', async () => {
    const production = await call(alice, 'DELETE', `${P}/envs/production`);
    expect(production.statusCode).toBe(409);
    expect(production.json().message).toContain('cannot be deleted');
    expect((await call(alice, 'DELETE', `${P}/envs/staging`)).json().message).toContain('template');
    expect((await call(alice, 'POST', `${P}/envs`, { name: 'qa', protected: true })).statusCode).toBe(201);
    expect((await call(carol, 'DELETE', `${P}/envs/qa`)).statusCode).toBe(403);
    expect((await call(alice, 'DELETE', `${P}/envs/qa`)).statusCode).toBe(204);
    expect((await call(alice, 'GET', `${P}/envs/qa`)).statusCode).toBe(404);
    expect((await call(alice, 'DELETE', `${P}/envs/qa`)).statusCode).toBe(404);
    // Its slug stays taken while its records are retained.
    expect((await call(alice, 'POST', `${P}/envs`, { name: 'qa' })).statusCode).toBe(409);

    // The stopped preview pr-7, deleted through the API (by a member: it is not protected).
    expect((await call(carol, 'DELETE', `${P}/envs/pr-7`)).statusCode).toBe(204);
    expect((await call(carol, 'GET', `${P}/previews`)).json().previews).toEqual([]);
  });

  it('reopening a closed pull request brings its preview back', async () => {
    const triggered = await pullRequest('reopened', 8, shas[1]!);
    expect(triggered).toMatchObject([{ environment: 'pr-8', created: true }]);
    await answers('web.pr-8.shop.acme.localhost', 'from-template v2 None');
    expect((await call(carol, 'GET', `${P}/envs/pr-8`)).statusCode).toBe(200);
  });

  it('past the retention period, the sweep removes deleted environments with their records; live ones stay', async () => {
    const pr7 = await h.ctx.db.selectFrom('environments').select('id').where('slug', '=', 'pr-7').executeTakeFirstOrThrow();
    expect(await h.ctx.db.selectFrom('deployments').select('id').where('environment_id', '=', pr7.id).execute()).not.toHaveLength(0);
    // The job loop runs this with PREVIEW_RETENTION_HOURS; zero hours: everything deleted so far is due.
    expect(await sweepDeletedEnvironments(h.ctx.db, 0)).toBe(2); // pr-7 and qa
    expect(await h.ctx.db.selectFrom('deployments').select('id').where('environment_id', '=', pr7.id).execute()).toHaveLength(0);
    expect((await call(carol, 'GET', `${P}/envs`)).json().map((e: { slug: string }) => e.slug)).toEqual(['production', 'staging', 'pr-8']);
    expect((await call(alice, 'POST', `${P}/envs`, { name: 'qa' })).statusCode).toBe(201);
  });
});
