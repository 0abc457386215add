import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { createApp } from '../pipeline-build/fixtures.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 10: the local runtime never runs an application unconfined by accident. When the
 * sandbox cannot be set up it refuses to start instances, naming what is missing; only
 * RUNTIME_ISOLATION=none runs them unconfined, with a warning at every start.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const WHOAMI = pythonHttpApp("f'uid={os.getuid()}'");
const runtimeEnv = { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 };

let h: Harness | undefined;
let repo: TestRepo | undefined;
afterEach(async () => {
  await h?.close();
  repo?.remove();
  h = undefined;
});

function controllersOf(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

function whoamiRepo() {
  repo = new TestRepo();
  repo.commit({ 'server.py': WHOAMI, Procfile: 'web: python3 server.py\n' });
  return repo;
}

/** The app each case deploys: it answers with the user it runs as. */
const createWhoamiApp = () =>
  createApp(h!, { github_repository: whoamiRepo().dir, auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 30 });

describe.skipIf(missing !== null)('failing closed (issue 10)', () => {
  it('refuses to start instances when bubblewrap cannot be found, and says so', async () => {
    // The runtime checks the machine once, at start: here without bwrap on its PATH.
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      h = await createHarness(runtimeEnv, { jobs: true, runtime: true });
    } finally {
      process.env.PATH = path;
    }
    const t = await createWhoamiApp();
    const { deployment } = await chainDeploy(h, t);
    expect(deployment.error).toBe(true);
    expect(deployment.error_detail).toContain('bwrap is not installed (Debian package bubblewrap)');
    expect(deployment.error_detail).toContain('RUNTIME_ISOLATION=none');
    expect(localRuntime(h.ctx).runtimeService.driver.list()).toEqual([]);
    expect(h.logs()).toContain('applications cannot run: bwrap is not installed');
  }, 120_000);

  it('refuses to start instances when pasta cannot be found (no network namespace without it), and names its package', async () => {
    // bubblewrap and setpriv are there, pasta is not.
    const bin = mkdtempSync(join(tmpdir(), 'slipway-no-pasta-'));
    for (const program of ['bwrap', 'setpriv']) {
      symlinkSync(
        execFileSync('sh', ['-c', `command -v ${program}`])
          .toString()
          .trim(),
        join(bin, program),
      );
    }
    const path = process.env.PATH;
    process.env.PATH = bin;
    try {
      h = await createHarness(runtimeEnv, { jobs: true, runtime: true });
    } finally {
      process.env.PATH = path;
      rmSync(bin, { recursive: true, force: true });
    }
    const t = await createWhoamiApp();
    const { deployment } = await chainDeploy(h, t);
    expect(deployment.error).toBe(true);
    expect(deployment.error_detail).toContain('pasta is not installed (Debian package passt)');
    expect(localRuntime(h.ctx).runtimeService.driver.list()).toEqual([]);
    expect(h.logs()).toContain('applications cannot run: pasta is not installed');
  }, 120_000);

  it('applies the limits with cgroup v2 when CGROUP_VERSION=2, and refuses to start instances where v2 lacks the controllers', async () => {
    h = await createHarness({ ...runtimeEnv, CGROUP_VERSION: '2' }, { jobs: true, runtime: true });
    const t = await createWhoamiApp();
    const { deployment } = await chainDeploy(h, t);
    const v2 = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].some((dir) =>
      ['memory', 'cpu', 'pids'].every((c) => controllersOf(dir).includes(c)),
    );
    if (v2) {
      // A v2 host: the instance runs in a v2 group (one "0::" line, no per-controller v1 groups of ours).
      expect(deployment.complete, deployment.error_detail).toBe(true);
      const pid = localRuntime(h.ctx)
        .runtimeService.driver.list()
        .find((s) => s.pid)!.pid!;
      expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).toMatch(/^0::\/.*slipway\/instance-/m);
    } else {
      // This machine: v2 (/sys/fs/cgroup/unified) has only hugetlb, so nothing starts and the reason is given.
      expect(deployment.error).toBe(true);
      expect(deployment.error_detail).toContain('no cgroup v2 hierarchy with the memory, cpu and pids controllers');
      expect(localRuntime(h.ctx).runtimeService.driver.list()).toEqual([]);
    }
  }, 120_000);

  it('runs applications unconfined only with RUNTIME_ISOLATION=none, warning at start', async () => {
    h = await createHarness({ ...runtimeEnv, RUNTIME_ISOLATION: 'none' }, { jobs: true, runtime: true });
    expect(h.logs()).toContain('RUNTIME_ISOLATION=none: builds and applications run as root');
    const t = await createWhoamiApp();
    const { deployment } = await chainDeploy(h, t);
    expect(deployment.complete, deployment.error_detail).toBe(true);
    const r = await routerGet(localRuntime(h.ctx).router.port, new URL(deployment.deploy_metadata.url).hostname);
    expect(r.body).toBe('uid=0');
  }, 120_000);

  it("runs them as the application's own user by default", async () => {
    h = await createHarness(runtimeEnv, { jobs: true, runtime: true });
    expect(h.logs()).toContain('applications run sandboxed');
    const t = await createWhoamiApp();
    const { deployment } = await chainDeploy(h, t);
    expect(deployment.complete, deployment.error_detail).toBe(true);
    const r = await routerGet(localRuntime(h.ctx).router.port, new URL(deployment.deploy_metadata.url).hostname);
    const { uid } = await h.ctx.db.selectFrom('sandbox_uids').select('uid').where('application_id', '=', t.appId).executeTakeFirstOrThrow();
    expect(uid).toBeGreaterThanOrEqual(200000);
    expect(r.body).toBe(`uid=${uid}`);
  }, 120_000);
});
