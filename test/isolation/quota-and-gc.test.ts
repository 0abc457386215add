import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { seedApplication } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary } from '../registry/registry-server.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 27, class 5 (one tenant exhausts what all share), through the HTTP API with the real
 * pipeline: an organization's disk quota refuses its new builds (naming usage and limit) and
 * no other organization's; garbage collection keeps the last N releases per environment and
 * answers a clear 409 for a collected one; links a tenant plants in its artifact are counted
 * and removed as links, never their host targets; and a user's organizations share one
 * pipeline budget, so creating more organizations gets no more of the pipeline.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);
const noDockerfileBuilds = missing ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static', git: 'git' });
if (noDockerfileBuilds) console.warn(`[test/isolation] skipping garbage collection of Dockerfile builds: ${noDockerfileBuilds}`);

const KEPT = 2;
const USER_QUEUE_LIMIT = 3;
const ORGS_PER_USER = 3;
const BIG_BYTES = 3 * 1024 * 1024;
const CANARY_BYTES = 8 * 1024 * 1024;

let h: Harness;
let admin: TestUser;
const repos: TestRepo[] = [];
let canary: string;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 5000,
      RELEASES_KEPT_PER_ENVIRONMENT: KEPT,
      PIPELINE_USER_QUEUE_LIMIT: USER_QUEUE_LIMIT,
      PIPELINE_USER_CONCURRENCY: 1,
      ORGS_PER_USER_MAX: ORGS_PER_USER,
    },
    { jobs: true, runtime: true },
  );
  admin = await h.user({ admin: true });
  // A host directory and file no tenant owns: planted links point at them.
  canary = mkdtempSync(join(tmpdir(), 'slipway-canary-'));
  mkdirSync(join(canary, 'inner'));
  writeFileSync(join(canary, 'inner', 'weight.bin'), Buffer.alloc(CANARY_BYTES, 1));
  writeFileSync(join(canary, 'keep.txt'), 'canary alive');
}, 120_000);

afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
  if (canary) rmSync(canary, { recursive: true, force: true });
});

function repo(files: Record<string, string>) {
  const r = new TestRepo();
  repos.push(r);
  r.commit(files);
  return r;
}

const usageOf = async (t: TestApp) => {
  const r = await h.app.inject({ method: 'GET', url: `/v1/organizations/${t.orgSlug}/usage`, headers: t.user.headers });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
};

const imageCount = async (appId: string) =>
  Number(
    (
      await h.ctx.db
        .selectFrom('images')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('application_id', '=', appId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe.skipIf(missing)('disk quota per organization', () => {
  it("refuses the next build of an organization over its quota with a 409 naming usage and limit, and not another organization's", async () => {
    const big = repo({
      'slipway.json': JSON.stringify({ build: `head -c ${BIG_BYTES} /dev/zero > big.bin` }),
      Procfile: 'web: sleep 1000\n',
    });
    const tenant = await createApp(h, { github_repository: big.dir, auto_deploy_branch: 'main' });
    // A plain member cannot raise their own quota; the site administrator sets a tiny one.
    const own = await h.app.inject({
      method: 'PUT',
      url: `/v1/organizations/${tenant.orgSlug}/pipeline-limits`,
      headers: tenant.user.headers,
      payload: { disk_quota_mb: 100 },
    });
    expect(own.statusCode).toBe(403);
    const set = await h.app.inject({
      method: 'PUT',
      url: `/v1/organizations/${tenant.orgSlug}/pipeline-limits`,
      headers: admin.headers,
      payload: { disk_quota_mb: 2 },
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ disk_quota_mb: 2, effective_disk_quota_mb: 2, build_timeout_seconds: null });

    const before = await usageOf(tenant);
    expect(before).toMatchObject({ organization: tenant.orgSlug, quota_bytes: 2 * 1024 * 1024, over_quota: false });

    // Under the quota: the build runs and writes its big artifact.
    const first = await buildAndWait(h, tenant);
    expect(first.detail.built, first.log.log_text).toBe(true);
    const after = await usageOf(tenant);
    expect(after.bytes.artifacts).toBeGreaterThanOrEqual(BIG_BYTES);
    expect(after.total_bytes).toBe(after.bytes.artifacts + after.bytes.images + after.bytes.caches + after.bytes.logs);
    expect(after.over_quota).toBe(true);

    // Over it: every way to start a build is refused, naming the usage and the limit, and nothing is stored.
    const images = await imageCount(tenant.appId);
    const refused = await h.app.inject({ method: 'POST', url: `/v1/images/${tenant.appId}/build`, headers: tenant.user.headers });
    expect(refused.statusCode, refused.body).toBe(409);
    const message: string = refused.json().message;
    expect(message).toContain('Disk quota exceeded');
    expect(message).toContain(`${after.total_bytes} bytes`);
    expect(message).toContain(`${2 * 1024 * 1024} bytes`);
    expect(message).toContain('2.00 MiB quota');
    const deploy = await h.app.inject({ method: 'POST', url: `/v1/applications/${tenant.appId}/deploy`, headers: tenant.user.headers });
    expect(deploy.statusCode, deploy.body).toBe(409);
    expect(deploy.json().message).toContain('Disk quota exceeded');
    expect(await imageCount(tenant.appId)).toBe(images);

    // Another organization's build still runs.
    const other = await createApp(h, { github_repository: big.dir });
    const built = await buildAndWait(h, other);
    expect(built.detail.built, built.log.log_text).toBe(true);

    // The operator raises the quota: the tenant builds again.
    const raised = await h.app.inject({
      method: 'PUT',
      url: `/v1/organizations/${tenant.orgSlug}/pipeline-limits`,
      headers: admin.headers,
      payload: { disk_quota_mb: 100 },
    });
    expect(raised.statusCode).toBe(200);
    expect((await buildAndWait(h, tenant)).detail.built).toBe(true);
  }, 300_000);
});

describe.skipIf(missing)('garbage collection of what no kept release references', () => {
  let t: TestApp;
  let versionRepo: TestRepo;
  const deployed: Array<{ releaseId: string; imageVersion: number; host: string }> = [];
  const artifact = (version: number) => join(h.dataDir, 'images', t.appId, String(version));
  const serve = (version: number) => pythonHttpApp(`'version ${version}'`);
  // The first version plants links to the host's canary from inside its build (a hostile tenant).
  const plantLinks = () =>
    `ln -s ${canary} canary-dir && ln -s ${join(canary, 'keep.txt')} canary-file && mkdir -p deep/er && ln -s ${canary} deep/er/escape`;

  it('counts a link planted in the artifact as a link, never its target', async () => {
    versionRepo = repo({
      'server.py': serve(1),
      Procfile: 'web: python3 server.py\n',
      'slipway.json': JSON.stringify({ build: plantLinks() }),
    });
    t = await createApp(h, {
      github_repository: versionRepo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const { image, deployment } = await chainDeploy(h, t);
    expect(image.built, JSON.stringify(image)).toBe(true);
    expect(deployment?.complete, JSON.stringify(deployment)).toBe(true);
    deployed.push({
      releaseId: deployment.release.id,
      imageVersion: image.version,
      host: new URL(deployment.deploy_metadata.url).hostname,
    });
    // The links are really there, pointing out of the tenant's tree.
    for (const link of ['canary-dir', 'canary-file', 'deep/er/escape']) {
      // The member's tree is the artifact's app/ (the directory around it is the platform's).
      expect(lstatSync(join(artifact(image.version), 'app', link)).isSymbolicLink(), link).toBe(true);
    }
    const usage = await usageOf(t);
    expect(usage.bytes.artifacts).toBeGreaterThan(0);
    expect(usage.bytes.artifacts).toBeLessThan(CANARY_BYTES);
    expect(usage.total_bytes).toBeLessThan(CANARY_BYTES);
  }, 300_000);

  it(`keeps the last ${KEPT} releases after 4 deploys: older artifacts gone, kept ones roll back and serve, a collected one answers 409`, async () => {
    for (const version of [2, 3, 4]) {
      versionRepo.commit({ 'server.py': serve(version), 'slipway.json': JSON.stringify({ build: 'true' }) });
      const { image, deployment } = await chainDeploy(h, t);
      expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
      deployed.push({
        releaseId: deployment.release.id,
        imageVersion: image.version,
        host: new URL(deployment.deploy_metadata.url).hostname,
      });
    }
    const [v1, v2, v3, v4] = deployed.map((d) => d.imageVersion) as [number, number, number, number];
    // Collection runs once each deploy's job has settled.
    await waitFor('the oldest artifacts to be collected', () => !existsSync(artifact(v1)) && !existsSync(artifact(v2)), {
      timeout: 30_000,
    });
    expect(existsSync(artifact(v3))).toBe(true);
    expect(existsSync(artifact(v4))).toBe(true);
    const images = await h.app.inject({ method: 'GET', url: `/v1/images/${t.appId}`, headers: t.user.headers });
    expect(images.statusCode).toBe(200);
    const collected = await h.ctx.db
      .selectFrom('images')
      .select(['version', 'collected_at'])
      .where('application_id', '=', t.appId)
      .execute();
    expect(
      collected
        .filter((i) => i.collected_at !== null)
        .map((i) => i.version)
        .sort(),
    ).toEqual([v1, v2]);

    const port = localRuntime(h.ctx).router.port;
    const host = deployed[3]!.host;
    expect((await routerGet(port, host)).body).toBe('version 4');

    const rollback = (releaseId: string) =>
      h.app.inject({
        method: 'POST',
        url: `/v1/applications/${t.appId}/rollback`,
        headers: t.user.headers,
        payload: { release_id: releaseId },
      });
    const settle = (deploymentId: string) =>
      waitFor(
        'the rollback',
        async () => {
          const d = (await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/detail`, headers: t.user.headers })).json();
          return d.complete || d.error ? d : null;
        },
        120_000,
      );

    // A kept release rolls back and serves.
    const back = await rollback(deployed[2]!.releaseId);
    expect(back.statusCode, back.body).toBe(202);
    expect((await settle(back.json().id)).complete).toBe(true);
    await waitFor('version 3 to serve', async () => (await routerGet(port, host)).body === 'version 3', 30_000);

    // A collected one answers 409 saying so, and nothing is queued.
    const deploymentCount = async () =>
      (await h.ctx.db.selectFrom('deployments').select('id').where('application_id', '=', t.appId).execute()).length;
    const deploymentsBefore = await deploymentCount();
    const gone = await rollback(deployed[0]!.releaseId);
    expect(gone.statusCode, gone.body).toBe(409);
    expect(gone.json().message).toMatch(/release v\d+ was garbage-collected \(only the last 2 releases/);
    const deployGone = await h.app.inject({
      method: 'POST',
      url: `/v1/releases/${deployed[1]!.releaseId}/deploy`,
      headers: t.user.headers,
    });
    expect(deployGone.statusCode, deployGone.body).toBe(409);
    expect(deployGone.json().message).toContain('was garbage-collected');
    expect(await deploymentCount()).toBe(deploymentsBefore);

    // The newest kept release comes back too, and the kept artifacts are still there.
    const forward = await rollback(deployed[3]!.releaseId);
    expect(forward.statusCode, forward.body).toBe(202);
    expect((await settle(forward.json().id)).complete).toBe(true);
    await waitFor('version 4 to serve', async () => (await routerGet(port, host)).body === 'version 4', 30_000);
    expect(existsSync(artifact(v3)) && existsSync(artifact(v4))).toBe(true);
  }, 600_000);

  it("removed the planted links with the collected artifact, never the links' targets", () => {
    expect(existsSync(artifact(deployed[0]!.imageVersion))).toBe(false);
    expect(readFileSync(join(canary, 'keep.txt'), 'utf8')).toBe('canary alive');
    expect(readFileSync(join(canary, 'inner', 'weight.bin')).length).toBe(CANARY_BYTES);
  });
});

describe.skipIf(!!noDockerfileBuilds)('garbage collection of Dockerfile builds', () => {
  it("removes a collected version's image from the application's build storage and keeps the kept ones'", async () => {
    await buildBusyboxBase(join(h.dataDir, 'containers'));
    const dockerfile = (version: number) => `FROM ${BASE_IMAGE}\nRUN mkdir -p /www && echo version-${version} > /www/index.html\n`;
    const r = repo({ Dockerfile: dockerfile(1), Procfile: 'web: httpd -f -p $PORT -h /www\n' });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
    const versions: number[] = [];
    let repositoryName = '';
    // Builds for production use that environment's cache scope: its own build storage.
    const scopes = join(h.dataDir, 'containers', 'apps', t.appId, 'scopes');
    // The storage's image index, read as a file: buildah run as root here would take the storage over from the sandbox's user.
    const tagged = (version: number) =>
      readdirSync(scopes).some((scope) => {
        // Either driver's storage (BUILDAH_STORAGE_DRIVER=auto picks overlay where it works).
        return ['storage/vfs-images', 'storage-overlay/overlay-images'].some((dir) => {
          const file = join(scopes, scope, dir, 'images.json');
          const index = (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : []) as Array<{ names?: string[] }>;
          return index.some((image) => image.names?.includes(`localhost/${repositoryName}:${version}`));
        });
      });
    for (const version of [1, 2, 3]) {
      if (version > 1) r.commit({ Dockerfile: dockerfile(version) });
      const { image, deployment } = await chainDeploy(h, t);
      expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
      versions.push(image.version);
      repositoryName = image.repository_name;
      // Each version's image is in the application's build storage once built.
      expect(tagged(image.version)).toBe(true);
    }
    const [v1, v2, v3] = versions as [number, number, number];
    await waitFor('the oldest version to leave the build storage', () => !tagged(v1), 30_000);
    expect(existsSync(join(h.dataDir, 'images', t.appId, String(v1)))).toBe(false);
    expect(tagged(v2)).toBe(true);
    expect(tagged(v3)).toBe(true);
    const usage = await usageOf(t);
    expect(usage.bytes.images).toBeGreaterThan(0);
  }, 300_000);
});

describe.skipIf(missing)('pipeline fairness that a new organization does not reset', () => {
  it("caps one user's builds across all the organizations they create, while another user's build runs", async () => {
    const slow = repo({ 'slipway.json': JSON.stringify({ build: 'sleep 6' }), Procfile: 'web: sleep 1000\n' });
    const flooder = await h.user();
    const apps: string[] = [];
    for (let i = 1; i <= ORGS_PER_USER; i++) {
      const { app } = await seedApplication(h, flooder, { org: `Flood ${i} ${flooder.username}`, project: 'P', app: 'A' });
      const patched = await h.app.inject({
        method: 'PATCH',
        url: `/v1/applications/${app.id}/settings`,
        headers: flooder.headers,
        payload: { github_repository: slow.dir },
      });
      expect(patched.statusCode, patched.body).toBe(200);
      apps.push(app.id);
    }
    // No more organizations for a plain user past ORGS_PER_USER_MAX (a site administrator may).
    const extra = await h.app.inject({
      method: 'POST',
      url: '/v1/organizations',
      headers: flooder.headers,
      payload: { name: `Flood more ${flooder.username}` },
    });
    expect(extra.statusCode, extra.body).toBe(409);
    expect(extra.json().message).toContain(`already created ${ORGS_PER_USER} organizations`);

    const build = (user: TestUser, appId: string) =>
      h.app.inject({ method: 'POST', url: `/v1/images/${appId}/build`, headers: user.headers });
    // One build in each organization: each organization is under its own cap of 20 ...
    for (const appId of apps) expect((await build(flooder, appId)).statusCode).toBe(202);
    const stored = await h.ctx.db.selectFrom('images').select('id').where('application_id', 'in', apps).execute();
    // ... but the user's budget is spent across them: the next one, in any of them, is refused.
    for (const appId of apps) {
      const refused = await build(flooder, appId);
      expect(refused.statusCode, refused.body).toBe(429);
      expect(refused.json().message).toContain(`already have ${USER_QUEUE_LIMIT} pipeline jobs waiting or running together`);
      expect(refused.json().message).toContain('per creating user');
    }
    expect(await h.ctx.db.selectFrom('images').select('id').where('application_id', 'in', apps).execute()).toHaveLength(stored.length);

    // Another user's build runs while the flood is still going (one of the flooder's at a time).
    const other = await createApp(h, {
      github_repository: repo({ 'slipway.json': JSON.stringify({ build: 'true' }), Procfile: 'web: true\n' }).dir,
    });
    const done = await buildAndWait(h, other);
    expect(done.detail.built, done.log.log_text).toBe(true);
    const flood = await h.ctx.db.selectFrom('images').select(['status', 'started_at']).where('application_id', 'in', apps).execute();
    expect(flood.filter((i) => i.status === 'building').length).toBeGreaterThanOrEqual(1);

    // The flood drains, one at a time (PIPELINE_USER_CONCURRENCY=1), and then the user may queue again.
    await waitFor(
      'the flood to drain',
      async () => {
        const rows = await h.ctx.db.selectFrom('images').select('status').where('application_id', 'in', apps).execute();
        return rows.every((r) => r.status !== 'building');
      },
      { timeout: 120_000, every: 250 },
    );
    expect((await build(flooder, apps[0]!)).statusCode).toBe(202);
  }, 300_000);
});
