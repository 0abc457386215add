import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { waitFor } from '../helpers/wait.js';
import { buildAndWait, createApp } from '../pipeline-build/fixtures.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 27, new variants found in review, through the HTTP API with the real pipeline.
 *
 * Class 1 (privileged code follows tenant-controlled paths), through the garbage collector:
 * a collected release's artifact is removed by root while a tenant process (a one-off run
 * started on that release) can still write it. A removal that walks by path (lstat, readdir,
 * unlink `dir/name`) follows a directory the tenant swaps for a symlink half-way, and deletes
 * host files with root's rights. The removal must stay in the directories it opened.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const BAIT_FILES = 10_000;
const names = Array.from({ length: BAIT_FILES }, (_, i) => `f${String(i).padStart(5, '0')}`);

let h: Harness;
const repos: TestRepo[] = [];
let canary: string;
/** DATA_DIR where an operator who runs Slipway from /opt/slipway with the default `./data` has it: below a system directory every sandbox sees. */
let dataDir: string;

beforeAll(async () => {
  if (missing) return;
  mkdirSync('/opt', { recursive: true });
  dataDir = mkdtempSync('/opt/slipway-review-data-');
  h = await createHarness(
    {
      DATA_DIR: dataDir,
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 5000,
      RELEASES_KEPT_PER_ENVIRONMENT: 1,
      // The one-off holds a pipeline slot while the next deploy runs.
      PIPELINE_CONCURRENCY: 4,
      PIPELINE_ORG_CONCURRENCY: 4,
      PIPELINE_USER_CONCURRENCY: 4,
      BUILD_MEMORY_MB: 128,
      STORAGE_SWEEP_SECONDS: 10,
    },
    { jobs: true, runtime: true },
  );
  // A host directory only root writes, holding files named like the tenant's bait.
  canary = mkdtempSync(join(tmpdir(), 'slipway-gc-canary-'));
  mkdirSync(join(canary, 'files'));
  for (const name of names) writeFileSync(join(canary, 'files', name), 'host file');
}, 120_000);

afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
  if (canary) rmSync(canary, { recursive: true, force: true });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Run by the tenant inside its sandbox (in the release's tree, or the artifact directory the
 * runtime handed over when the platform's manifest was already gone): as soon as the collector
 * has started emptying `bait/`, swap it for a link to the host directory.
 */
const SWAP = `
import os, sys, time
if os.path.isdir('app'):
    os.chdir('app')
sentinels = ['bait/f%05d' % i for i in range(64)]
deadline = time.time() + 20
while all(os.path.lexists(s) for s in sentinels) and time.time() < deadline:
    pass
os.rename('bait', 'bait.moved')
os.symlink(sys.argv[1], 'bait')
print('swapped', flush=True)
time.sleep(2)
`;

describe.skipIf(missing)('garbage collection while a tenant process still writes the collected tree', () => {
  it('removes only what is inside the artifact: a directory swapped for a link mid-removal leaves the host untouched', async () => {
    const r = new TestRepo();
    repos.push(r);
    r.commit({
      'server.py': pythonHttpApp(`'version 1'`),
      'swap.py': SWAP,
      Procfile: 'web: python3 server.py\n',
      // A big tree: removing it takes the collector a while.
      'slipway.json': JSON.stringify({ build: `mkdir bait && cd bait && seq -f 'f%05g' 0 ${BAIT_FILES - 1} | xargs touch` }),
    });
    const t = await createApp(h, { github_repository: r.dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
    const first = await chainDeploy(h, t);
    expect(first.deployment?.complete, JSON.stringify(first.deployment ?? first.image)).toBe(true);
    const v1 = first.image.version as number;
    expect(existsSync(join(dataDir, 'images', t.appId, String(v1), 'app', 'bait', 'f00000'))).toBe(true);

    // v2's deploy is queued, then a one-off on the release serving now (v1): it runs once the
    // deploy's job is done, while the collector removes v1 (one release kept).
    r.commit({ 'server.py': pythonHttpApp(`'version 2'`) });
    const deploy = chainDeploy(h, t);
    await waitFor(
      'the v2 build to start',
      async () =>
        (await h.ctx.db
          .selectFrom('images')
          .select('id')
          .where('application_id', '=', t.appId)
          .where('version', '>', v1)
          .executeTakeFirst()) ?? null,
      30_000,
    );
    const run = await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${t.appId}/runs`,
      headers: t.user.headers,
      payload: { command: `python3 swap.py ${join(canary, 'files')}`, timeout_seconds: 300 },
    });
    expect(run.statusCode, run.body).toBe(202);
    expect(run.json().release_id).toBe(first.deployment.release.id);
    const second = await deploy;
    expect(second.deployment?.complete, JSON.stringify(second.deployment ?? second.image)).toBe(true);
    await waitFor(
      'v1 to be collected and the one-off to end',
      async () => {
        const image = await h.ctx.db
          .selectFrom('images')
          .select('collected_at')
          .where('application_id', '=', t.appId)
          .where('version', '=', v1)
          .executeTakeFirst();
        const status = (await h.app.inject({ method: 'GET', url: `/v1/runs/${run.json().id}`, headers: t.user.headers })).json().status;
        return image?.collected_at != null && status !== 'pending' && status !== 'running';
      },
      { timeout: 200_000, every: 500 },
    );

    // The one-off kept its release until it ended (it ran to the end, on v1); the sweep collected v1 afterwards.
    const ran = (await h.app.inject({ method: 'GET', url: `/v1/runs/${run.json().id}`, headers: t.user.headers })).json();
    expect(ran.status, JSON.stringify(ran)).toBe('succeeded');
    // Every host file is still there: the removal never went through the tenant's link.
    expect(readdirSync(join(canary, 'files')).length).toBe(BAIT_FILES);
  }, 300_000);
});

/**
 * Class 1/2 variant: the sandbox binds the host's /usr, /etc and /opt read-only. An operator
 * who runs Slipway from /opt/slipway with the default DATA_DIR (`./data`) puts every
 * application's build cache (its HOME, npm and pip caches) inside every sandbox's view.
 */
describe.skipIf(missing)("the platform's data directory below a system directory the sandbox binds", () => {
  it("a member's build reads neither another organization's build cache nor anything else of DATA_DIR", async () => {
    const victimRepo = new TestRepo();
    const attackerRepo = new TestRepo();
    repos.push(victimRepo, attackerRepo);
    victimRepo.commit({
      'slipway.json': JSON.stringify({ build: 'echo "//registry.example/:_authToken=VICTIM-NPM-TOKEN-5e1f" > "$HOME/.npmrc"' }),
      Procfile: 'web: sleep 1000\n',
    });
    const victim = await createApp(h, { github_repository: victimRepo.dir });
    const victimBuild = await buildAndWait(h, victim);
    expect(victimBuild.detail.built, victimBuild.log.log_text).toBe(true);
    // HOME is the build's cache scope's (production's environment here).
    const scopes = join(dataDir, 'cache', 'apps', victim.appId, 'scopes');
    const [scope] = readdirSync(scopes);
    expect(readFileSync(join(scopes, scope!, 'home', '.npmrc'), 'utf8')).toContain('VICTIM-NPM-TOKEN');

    attackerRepo.commit({
      'slipway.json': JSON.stringify({
        build: `ls -la ${dataDir} ${dataDir}/cache/apps || true; cat ${dataDir}/cache/apps/*/home/.npmrc ${dataDir}/cache/apps/*/scopes/*/home/.npmrc || true; echo probe-done`,
      }),
      Procfile: 'web: sleep 1000\n',
    });
    const attacker = await createApp(h, { github_repository: attackerRepo.dir });
    const attackerBuild = await buildAndWait(h, attacker);
    expect(attackerBuild.detail.built, attackerBuild.log.log_text).toBe(true);
    expect(attackerBuild.log.log_text).toContain('probe-done');
    expect(attackerBuild.log.log_text).not.toContain('VICTIM-NPM-TOKEN');
    expect(attackerBuild.log.log_text).not.toContain(victim.appId);
  }, 300_000);
});

/**
 * Class 5 variant: the disk quota counted apparent bytes only, so a build that makes a
 * hundred thousand empty files stayed at a few KiB of "usage" while using up the host's
 * inodes (every organization's writes then fail). Each entry now counts one block.
 */
describe.skipIf(missing)('disk quota and empty files', () => {
  it('counts every file toward the quota, so empty files cannot fill the host unseen', async () => {
    const EMPTY_FILES = 20_000;
    const r = new TestRepo();
    repos.push(r);
    r.commit({
      'slipway.json': JSON.stringify({ build: `mkdir empty && cd empty && seq -f 'e%05g' 1 ${EMPTY_FILES} | xargs touch` }),
      Procfile: 'web: sleep 1000\n',
    });
    const t = await createApp(h, { github_repository: r.dir });
    const built = await buildAndWait(h, t);
    expect(built.detail.built, built.log.log_text).toBe(true);
    const usage = await h.app.inject({ method: 'GET', url: `/v1/organizations/${t.orgSlug}/usage`, headers: t.user.headers });
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json().bytes.artifacts).toBeGreaterThanOrEqual(EMPTY_FILES * 4096);
  }, 300_000);
});

/**
 * Class 5 variant: builds named no memory limit (only instances had their pod class's), so
 * one build step, or the tmpfs /tmp every sandbox gets, could take the host's memory and the
 * platform and its database with it. Each build step now runs under BUILD_MEMORY_MB.
 */
describe.skipIf(missing)('memory of a build', () => {
  it('stops a build step past the build memory limit, says so, and the platform keeps answering', async () => {
    const r = new TestRepo();
    repos.push(r);
    // 400 MiB in the private /tmp (a tmpfs: memory), well past the test's 128 MiB limit.
    r.commit({
      'slipway.json': JSON.stringify({ build: 'head -c 419430400 /dev/zero > /tmp/fill && echo FILLED-$((1 + 1))' }),
      Procfile: 'web: sleep 1000\n',
    });
    const t = await createApp(h, { github_repository: r.dir });
    const built = await buildAndWait(h, t);
    expect(built.detail.built, built.log.log_text).toBe(false);
    expect(built.log.log_text).not.toContain('FILLED-2');
    expect(built.detail.error_detail).toContain('OOM: the build exceeded its memory limit of 128 MiB');
    expect((await h.app.inject({ method: 'GET', url: `/v1/images/${t.appId}`, headers: t.user.headers })).statusCode).toBe(200);
  }, 300_000);
});
