import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/modules/github/signature.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary } from '../registry/registry-server.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 27, class 3: trust levels do not share build inputs. A pull request from a fork
 * (anyone on GitHub) gets a preview built and run by the real pipeline; it never sees the
 * application's, the project's or the template's secrets nor production's build-time
 * variables (only what is marked `previews: true`), and nothing its build writes (HOME,
 * `.npmrc`, the npm cache) is read by the next production build.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);
const buildahMissing = missing ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static', git: 'git' });
if (buildahMissing) console.warn(`[test/isolation] skipping the fork Dockerfile test: ${buildahMissing}`);

const HOOK_SECRET = 'hook-secret-fork-previews';
const REPOSITORY = 'acme/shop-web';
const APP_SECRET = 'app-secret-5d1f0a77';
const PROJECT_SECRET = 'project-secret-c83e19b2';
const TEMPLATE_SECRET = 'template-secret-71aa4e0c';
const PRODUCTION_BUILD_VALUE = 'prod-build-only-9b27d4';
const MARKED_VALUE = 'shown-to-previews-3e6c58';
const POISON_MARKER = 'POISONED-BY-FORK';

/** Serves what its build saw (build-env.txt), its own environment, and whether a poisoned step ran. */
const SERVER = pythonHttpApp(
  "json.dumps({'build': open('build-env.txt').read() if os.path.exists('build-env.txt') else '', 'runtime': dict(os.environ), 'poisoned': os.path.exists('poisoned.txt')})",
  'import json',
);

/** Production's branch: an npm build (its `build` script runs through npm's script-shell). */
const PRODUCTION_FILES = {
  'server.py': SERVER,
  Procfile: 'web: python3 server.py\n',
  'package.json': JSON.stringify({ name: 'shop', version: '1.0.0', private: true, scripts: { build: 'env > build-env.txt' } }),
  'package-lock.json': JSON.stringify({
    name: 'shop',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: 'shop', version: '1.0.0' } },
  }),
};

/**
 * The fork's build: plants `$HOME/.npmrc` whose `script-shell` runs its own script first (it
 * marks the build directory and prints the marker), and writes into the npm cache.
 */
const FORK_BUILD = [
  'env > build-env.txt',
  `printf '#!/bin/sh\\necho ${POISON_MARKER}\\ntouch poisoned.txt\\nexec /bin/sh "$@"\\n' > "$HOME/evil.sh"`,
  'chmod 755 "$HOME/evil.sh"',
  'echo "script-shell=$HOME/evil.sh" > "$HOME/.npmrc"',
  'mkdir -p "$npm_config_cache" && echo poisoned > "$npm_config_cache/_fork-was-here"',
  'echo planted-in-$HOME',
].join(' && ');

let h: Harness;
let repo: TestRepo;
let t: TestApp;
let P: string;
let mainSha: string;
let forkSha: string;
let productionHost: string;

const call = (method: string, url: string, payload?: unknown) =>
  h.app.inject({
    method: method as 'GET',
    url: `/v1${url}`,
    headers: t.user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

async function created(method: string, url: string, payload: unknown) {
  const res = await call(method, url, payload);
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json();
}

/**
 * A signed `pull_request` hook of the base repository (`REPOSITORY` at `repo.dir` unless named);
 * `headRepo` is where the head commit lives (a fork, or the repository itself).
 */
async function pullRequest(
  action: string,
  number: number,
  sha: string,
  headRepo: { full_name: string; id: number },
  base: { id: number; full_name: string; clone_url: string } = { id: 1, full_name: REPOSITORY, clone_url: repo.dir },
) {
  const body = Buffer.from(
    JSON.stringify({ action, number, pull_request: { number, head: { sha, ref: `feature-${number}`, repo: headRepo } }, repository: base }),
  );
  const res = await h.app.inject({
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
  expect(res.statusCode, res.body).toBe(200);
  const hook = await h.ctx.db.selectFrom('github_hooks').select('triggered').where('id', '=', res.json().hook_id).executeTakeFirstOrThrow();
  return hook.triggered as unknown as Array<{ environment: string; trust: string; started: Array<{ image_id: string }> }>;
}

interface Report {
  build: string;
  runtime: Record<string, string>;
  poisoned: boolean;
}

/** What the instance at `host` reports, once it answers (after its image `imageId` was built). */
async function reportOf(host: string, imageId: string): Promise<Report> {
  const image = await waitFor(
    `image ${imageId}`,
    async () => {
      const i = (await call('GET', `/images/${imageId}/detail`)).json();
      return i.built || i.error ? i : null;
    },
    180_000,
  );
  expect(image.error, image.error_detail).toBe(false);
  // A preview's first deployment, or a chain awaited to completion: what answers is this image's instance.
  return waitFor(
    `${host} answering`,
    async () => {
      const got = await routerGet(localRuntime(h.ctx).router.port, host).catch(() => null);
      return got?.status === 200 ? (JSON.parse(got.body) as Report) : null;
    },
    180_000,
    250,
  );
}

/** The image is marked built just before its build's throwaway scope is removed: wait for that too. */
const throwawayScopesGone = (scopes: string) =>
  waitFor('the throwaway cache scope removed', () => readdirSync(scopes).every((s) => !s.startsWith('preview-')), 10_000, 100);

async function previewHost(env: string) {
  const list = (await call('GET', `${P}/previews`)).json();
  const preview = list.previews.find((p: { environment: string }) => p.environment === env);
  return { preview, host: new URL(preview.urls.web).hostname };
}

async function imageLog(imageId: string) {
  const res = await call('GET', `/images/${imageId}/log`);
  expect(res.statusCode).toBe(200);
  return res.body;
}

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      PIPELINE_CONCURRENCY: 2,
      GITHUB_WEBHOOK_SECRET: HOOK_SECRET,
    },
    { jobs: true, runtime: true },
  );
  repo = new TestRepo('slipway-fork-previews-');
  mainSha = repo.commit(PRODUCTION_FILES, 'production');
  // The fork's commit: on a branch of its own, never on main (what production builds).
  repo.git('checkout', '-q', '-b', 'fork-head');
  forkSha = repo.commit({ 'slipway.json': JSON.stringify({ build: FORK_BUILD }), 'server.py': SERVER }, 'fork');
  repo.git('checkout', '-q', 'main');

  t = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', deployment_timeout: 60 });
  P = `/workspaces/${t.orgSlug}/projects/shop`;
  await created('POST', `/configurations/${t.appId}`, { name: 'APP_SECRET', value: APP_SECRET, secret: true });
  await created('POST', `/configurations/${t.appId}`, { name: 'MARKED', value: MARKED_VALUE, buildtime: true, previews: true });
  await created('POST', `${P}/config`, { name: 'PROJECT_SECRET', value: PROJECT_SECRET, secret: true, buildtime: true });
  await created('POST', `${P}/envs/production/config`, { name: 'PROD_BUILD_VAR', value: PRODUCTION_BUILD_VALUE, buildtime: true });
  await created('POST', `${P}/envs`, { name: 'staging' });
  await created('POST', `${P}/envs/staging/config`, { name: 'TEMPLATE_SECRET', value: TEMPLATE_SECRET, secret: true });
  // The owner copies the template's secrets into previews: still never into a fork's.
  await created('PUT', `${P}/previews`, { template_environment: 'staging', copy_secrets: true, max_concurrent: 5 });

  const first = await chainDeploy(h, t);
  expect(first.deployment?.complete, JSON.stringify(first.deployment ?? first.image)).toBe(true);
  productionHost = new URL(first.deployment.deploy_metadata.url).hostname;
  // The baseline the walls are measured against: production gets all of it.
  const report = await reportOf(productionHost, first.image.id);
  expect(report.build).toContain(PRODUCTION_BUILD_VALUE);
  expect(report.runtime.APP_SECRET).toBe(APP_SECRET);
}, 300_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe.skipIf(missing)('a pull request from a fork', () => {
  let forkImageId: string;

  it('builds and runs without any secret or production build-time variable, only with what is marked for previews', async () => {
    const triggered = await pullRequest('opened', 1, forkSha, { full_name: 'mallory/shop-web', id: 666 });
    expect(triggered).toMatchObject([{ environment: 'pr-1', trust: 'fork' }]);
    forkImageId = triggered[0]!.started[0]!.image_id;

    const { preview, host } = await previewHost('pr-1');
    // The rule applied is on the preview's record.
    expect(preview).toMatchObject({
      trust: 'fork',
      configuration: 'marked_for_previews_only',
      head_repository: 'mallory/shop-web',
      head_sha: forkSha,
    });
    const report = await reportOf(host, forkImageId);
    const everything = JSON.stringify(report);
    for (const value of [APP_SECRET, PROJECT_SECRET, TEMPLATE_SECRET, PRODUCTION_BUILD_VALUE]) expect(everything).not.toContain(value);
    expect(report.build).toContain(`MARKED=${MARKED_VALUE}`);
    expect(report.runtime.MARKED).toBe(MARKED_VALUE);

    const log = await imageLog(forkImageId);
    expect(log).toContain('planted-in-');
    expect(log).toContain('configuration marked_for_previews_only; throwaway build cache');
    for (const value of [APP_SECRET, PROJECT_SECRET, TEMPLATE_SECRET, PRODUCTION_BUILD_VALUE]) expect(log).not.toContain(value);
    const detail = (await call('GET', `/images/${forkImageId}/detail`)).json();
    expect(detail.image_metadata).toMatchObject({ cache_scope: 'throwaway', configuration: 'marked_for_previews_only' });
    // The configuration view of the preview shows the same rule.
    const view = (await call('GET', `${P}/envs/pr-1/services/web/config`)).json();
    expect(view.variables.map((v: { name: string }) => v.name)).toEqual(['MARKED']);
    // Its throwaway cache scope is gone.
    const scopes = join(h.dataDir, 'cache', 'apps', t.appId, 'scopes');
    await throwawayScopesGone(scopes);
  });

  it('its image is never what a production release ships', async () => {
    // The fork's image is the application's newest built image; a production release still freezes production's.
    const release = await created('POST', `/releases/${t.appId}/create`, undefined);
    const settled = await waitFor(
      'the production release',
      async () => {
        const r = (await call('GET', `/releases/${release.release_id}/detail`)).json();
        return r.built || r.error ? r : null;
      },
      60_000,
    );
    expect(settled.error, JSON.stringify(settled)).toBe(false);
    expect(settled.commit_sha).toBe(mainSha);
    expect(settled.image.id).not.toBe(forkImageId);
  });

  it('what its build planted in HOME and the npm cache does not reach the next production build', async () => {
    const next = await chainDeploy(h, t);
    expect(next.deployment?.complete, JSON.stringify(next.deployment ?? next.image)).toBe(true);
    const log = await imageLog(next.image.id);
    expect(log).toContain('npm run build');
    expect(log).not.toContain(POISON_MARKER);
    const report = await reportOf(productionHost, next.image.id);
    expect(report.poisoned).toBe(false);
    expect(report.build).toContain(PRODUCTION_BUILD_VALUE);
    // Production's HOME and npm cache are its environment's own scope; nothing of the fork is there.
    const scopes = join(h.dataDir, 'cache', 'apps', t.appId, 'scopes');
    const production = readdirSync(scopes).filter((s) => s.startsWith('env-'));
    expect(production).toHaveLength(1);
    expect(existsSync(join(scopes, production[0]!, 'home', '.npmrc'))).toBe(false);
    expect(existsSync(join(scopes, production[0]!, 'npm', '_fork-was-here'))).toBe(false);
  });
});

describe.skipIf(missing)('a pull request from a branch of the repository itself', () => {
  it('keeps the trusted rule: every scope, and the template secrets because copy_secrets is on', async () => {
    const triggered = await pullRequest('opened', 2, mainSha, { full_name: REPOSITORY, id: 1 });
    expect(triggered).toMatchObject([{ environment: 'pr-2', trust: 'same_repository' }]);
    const { preview, host } = await previewHost('pr-2');
    expect(preview).toMatchObject({ trust: 'same_repository', configuration: 'all', head_repository: REPOSITORY });
    const report = await reportOf(host, triggered[0]!.started[0]!.image_id);
    expect(report.runtime.APP_SECRET).toBe(APP_SECRET);
    expect(report.runtime.PROJECT_SECRET).toBe(PROJECT_SECRET);
    expect(report.runtime.TEMPLATE_SECRET).toBe(TEMPLATE_SECRET);
    // Production's own environment layer is not the preview's: its build-time variable stays out.
    expect(report.build).not.toContain(PRODUCTION_BUILD_VALUE);
    expect(report.build).toContain(`MARKED=${MARKED_VALUE}`);
  });

  it('a later hook never turns a fork preview into a trusted one', async () => {
    // The same pull request number, now claiming to be the repository's own: the environment stays a fork's.
    await pullRequest('synchronize', 1, forkSha, { full_name: REPOSITORY, id: 1 });
    const { preview } = await previewHost('pr-1');
    expect(preview).toMatchObject({ trust: 'fork', configuration: 'marked_for_previews_only' });
  });
});

/**
 * What the fork's RUN step writes into every layer of every build storage it can reach (through `/proc/1/root`):
 * vfs keeps each layer whole under vfs/dir, overlay each layer's files under overlay/<id>/diff, so both are tried.
 */
const LAYER_MARKER = 'FORK-WAS-IN-THE-LAYER';
const FORK_DOCKERFILE = `FROM ${BASE_IMAGE}
RUN for d in /proc/1/root/tmp/*/containers/apps/*/storage/vfs/dir/* /proc/1/root/tmp/*/containers/apps/*/scopes/*/storage/vfs/dir/* \\
      /proc/1/root/tmp/*/containers/apps/*/storage-overlay/overlay/*/diff /proc/1/root/tmp/*/containers/apps/*/scopes/*/storage-overlay/overlay/*/diff; do \\
      [ -d "$d" ] && echo ${LAYER_MARKER} > "$d/poisoned-by-fork" && echo "fork wrote into $d"; \\
    done; mkdir -p /www && echo fork > /www/index.html
CMD httpd -f -p $PORT -h /www
`;
/** Production's: reads what a poisoned base layer would hold; the same RUN text every build (a cached layer is reused). */
const PRODUCTION_DOCKERFILE = `FROM ${BASE_IMAGE}
RUN mkdir -p /www && (cat /poisoned-by-fork 2>/dev/null || true) && echo production > /www/index.html
CMD httpd -f -p $PORT -h /www
`;

describe.skipIf(buildahMissing)("a fork's Dockerfile build", () => {
  let d: TestApp;
  let dockerRepo: TestRepo;
  let dockerForkSha: string;

  beforeAll(async () => {
    await buildBusyboxBase(join(h.dataDir, 'containers'));
    dockerRepo = new TestRepo('slipway-fork-dockerfile-');
    dockerRepo.commit({ Dockerfile: PRODUCTION_DOCKERFILE });
    dockerRepo.git('checkout', '-q', '-b', 'fork-head');
    dockerForkSha = dockerRepo.commit({ Dockerfile: FORK_DOCKERFILE }, 'fork');
    dockerRepo.git('checkout', '-q', 'main');
    d = await createApp(h, { github_repository: dockerRepo.dir, auto_deploy_branch: 'main', deployment_timeout: 60 });
    const settings = await h.app.inject({
      method: 'PUT',
      url: `/v1/workspaces/${d.orgSlug}/projects/shop/previews`,
      headers: d.user.headers,
      payload: { template_environment: 'production' },
    });
    expect(settings.statusCode, settings.body).toBe(200);
    const first = await buildAndWait(h, d);
    expect(first.log.status, first.log.log_text).toBe('built');
  }, 300_000);

  afterAll(() => dockerRepo?.remove());

  it('cannot poison the layers (base or cached) the next production build reuses', async () => {
    const triggered = await pullRequest(
      'opened',
      3,
      dockerForkSha,
      { full_name: 'mallory/shop-docker', id: 667 },
      { id: 2, full_name: 'acme/shop-docker', clone_url: dockerRepo.dir },
    );
    expect(triggered).toMatchObject([{ environment: 'pr-3', trust: 'fork' }]);
    const forkImage = await waitFor(
      'the fork build',
      async () => {
        const r = await h.app.inject({
          method: 'GET',
          url: `/v1/images/${triggered[0]!.started[0]!.image_id}/log`,
          headers: d.user.headers,
        });
        const body = r.json() as { status: string; log_text: string };
        return body.status === 'building' ? null : body;
      },
      180_000,
    );
    expect(forkImage.status, forkImage.log_text).toBe('built');
    // The attack ran: it wrote into the layers it could reach, its own throwaway storage only.
    expect(forkImage.log_text).toMatch(/fork wrote into .*\/scopes\/preview-/);
    expect(forkImage.log_text).not.toMatch(/fork wrote into .*\/scopes\/env-/);
    const scopes = join(h.dataDir, 'containers', 'apps', d.appId, 'scopes');
    await throwawayScopesGone(scopes);

    const next = await buildAndWait(h, d);
    expect(next.log.status, next.log.log_text).toBe('built');
    expect(next.detail.image_metadata.cached_steps).toBeGreaterThan(0); // the layer cache is still used, per environment
    expect(next.log.log_text).not.toContain(LAYER_MARKER);
    const rootfs = join(h.dataDir, 'images', d.appId, String(next.version), 'rootfs');
    expect(existsSync(join(rootfs, 'www', 'index.html'))).toBe(true);
    expect(existsSync(join(rootfs, 'poisoned-by-fork'))).toBe(false);
  });
});

describe.skipIf(missing)('giving a secret to forks', () => {
  it('is an organization admin’s choice; a plain member gets a clear 403 and nothing changes', async () => {
    const member = await h.user();
    expect((await call('POST', `/workspaces/${t.orgSlug}/members`, { username: member.username })).statusCode).toBe(201);
    const as = (method: string, url: string, payload: unknown) =>
      h.app.inject({ method: method as 'POST', url: `/v1${url}`, headers: member.headers, payload: payload as object });

    const refused = await as('POST', `/configurations/${t.appId}`, {
      name: 'SHARED',
      value: 's3cr3t-shared',
      secret: true,
      previews: true,
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toContain('Only organization admins can give a secret to previews of pull requests from forks');
    const bulk = await as('POST', `${P}/config/bulk`, [{ name: 'SHARED', value: 's3cr3t-shared', secret: true, previews: true }]);
    expect(bulk.statusCode).toBe(403);
    const names = async () => [
      ...(await call('GET', `/configurations/${t.appId}`)).json().map((v: { name: string }) => v.name),
      ...(await call('GET', `${P}/config`)).json().map((v: { name: string }) => v.name),
    ];
    expect(await names()).not.toContain('SHARED');

    // A secret for production only, or a plain value for previews: any member.
    const secret = await as('POST', `/configurations/${t.appId}`, { name: 'SHARED', value: 's3cr3t-shared', secret: true });
    expect(secret.statusCode).toBe(201);
    expect((await as('POST', `/configurations/${t.appId}`, { name: 'PLAIN_FOR_PREVIEWS', value: 'x', previews: true })).statusCode).toBe(
      201,
    );
    // Marking the existing secret for previews is the same choice.
    const marked = await as('PATCH', `/configurations/${t.appId}/${secret.json().id}`, { previews: true });
    expect(marked.statusCode).toBe(403);
    expect((await call('GET', `/configurations/${t.appId}/${secret.json().id}`)).json().previews).toBe(false);
    const byAdmin = await call('PATCH', `/configurations/${t.appId}/${secret.json().id}`, { previews: true });
    expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    expect(byAdmin.json()).toMatchObject({ name: 'SHARED', secret: true, previews: true, value: '**secret**' });
  });
});
