import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { routerGet } from '../helpers/router-get.js';
import { createApp, setConfig } from '../pipeline-build/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary } from '../registry/registry-server.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 10: a Dockerfile image runs from its unpacked root behind the same walls as a
 * source build's processes. Its release command reports what it can see into the
 * deployment log (read through the API); its web process serves from the image.
 */
const missing = sandboxMissing() ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static', git: 'git' });
if (missing) console.warn(`[test/isolation] skipping the image sandbox test: ${missing}`);

const PROBE = [
  'echo "uid_map: $(cat /proc/self/uid_map)"',
  'echo "processes: $(ls /proc | grep -c "^[0-9]")"',
  'cat "$TARGET_DATA_DIR/secret.key" 2>/dev/null && echo READ-SECRET || echo secret-unreadable',
  '(echo x > /proc/sys/kernel/hostname) 2>/dev/null && echo WROTE-PROC || echo proc-read-only',
  'ls /root/.ssh 2>/dev/null && echo SAW-ROOT || echo root-home-unseen',
].join('; ');

let h: Harness;
let repo: TestRepo;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000 }, { jobs: true, runtime: true });
  await buildBusyboxBase(join(h.dataDir, 'containers'));
}, 120_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
});

describe.skipIf(!!missing)('a Dockerfile image in the sandbox (issue 10)', () => {
  it("runs as the application's unprivileged user, in its own PID namespace, without the platform's files", async () => {
    repo = new TestRepo();
    repo.commit({
      Dockerfile: `FROM ${BASE_IMAGE}\nRUN mkdir -p /www && echo image-ok > /www/index.html\nWORKDIR /www\n`,
      Procfile: `web: httpd -f -p $PORT -h /www\nrelease: ${PROBE}\n`,
    });
    const t = await createApp(h, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    await setConfig(h, t, 'TARGET_DATA_DIR', h.dataDir);
    const { image, deployment } = await chainDeploy(h, t);
    expect(image.image_metadata?.builder, JSON.stringify(image)).toBe('buildah');
    expect(deployment.complete, deployment.error_detail).toBe(true);
    const { uid } = await h.ctx.db.selectFrom('sandbox_uids').select('uid').where('application_id', '=', t.appId).executeTakeFirstOrThrow();
    // The release command's output (the log also quotes the command itself).
    const log = (deployment.deploy_log as string)
      .split('\n')
      .filter((l) => l.includes(' release | '))
      .join('\n');
    // Root inside the image (its USER), the sandbox user outside.
    expect(log).toMatch(new RegExp(`uid_map:\\s+0\\s+${uid}\\s+1`));
    expect(Number(/processes: (\d+)/.exec(log)?.[1])).toBeLessThan(10);
    for (const line of ['secret-unreadable', 'proc-read-only', 'root-home-unseen']) expect(log).toContain(line);
    for (const line of ['READ-SECRET', 'WROTE-PROC', 'SAW-ROOT']) expect(log).not.toContain(line);
    const url = new URL(deployment.deploy_metadata.url);
    expect(await routerGet(Number(url.port), url.hostname)).toEqual({ status: 200, body: 'image-ok\n' });
  }, 180_000);
});
