import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { routerGet } from '../helpers/router-get.js';
import { buildAndWait, createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary } from '../registry/registry-server.js';
import { chainDeploy, sandboxMissing } from './fixtures.js';

/**
 * Issue 10, Dockerfile builds: a plain member's Dockerfile whose `RUN` step attacks the
 * platform. buildah runs in the application's sandbox, so the step reaches neither DATA_DIR
 * (directly, or through `/proc/1/root`, the way out of buildah's chroot) nor another
 * organization's build storage, cannot write on the host or create device nodes, and sees
 * only its own processes and none of the platform's environment. The build still produces
 * a working image, which deploys and serves.
 */
const missing = sandboxMissing() ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static', git: 'git' });
if (missing) console.warn(`[test/isolation] skipping the hostile Dockerfile test: ${missing}`);

/** An environment variable of the platform's own process: no build step may read it. */
const PLATFORM_ENV_MARKER = 'platform-env-marker-4f1b7c';
const DECOYS = {
  'secret.key': 'SECRET-KEY-decoy-3a9d',
  'postgres.password': 'PG-PASSWORD-decoy-c27e',
  'registry/token-signing.pem': 'SIGNING-KEY-decoy-8e40',
};

/** Each attempt prints a line saying it failed (`denied-…`) or, if it worked, what it got. */
const HOSTILE_RUN = [
  'echo "build uid $(id -u), host map $(cat /proc/self/uid_map)"',
  ...Object.keys(DECOYS).flatMap((file) => [
    `(cat "$TARGET_DATA_DIR/${file}" 2>/dev/null && echo READ-${file}) || echo denied-read-${file}`,
    `(cat "/proc/1/root$TARGET_DATA_DIR/${file}" 2>/dev/null && echo ESCAPED-${file}) || echo denied-escape-${file}`,
  ]),
  // What it sees of DATA_DIR: at most the mount points of its own directories (its build context and storage).
  'echo "data dir shows: $(ls "/proc/1/root$TARGET_DATA_DIR" 2>/dev/null | tr "\\n" " ")"',
  '(ls "/proc/1/root$VICTIM_STORAGE" 2>/dev/null && echo LISTED-VICTIM) || echo denied-list-victim',
  '(ls "/proc/1/root$VICTIM_IMAGES" 2>/dev/null && echo LISTED-VICTIM-IMAGE) || echo denied-list-victim-image',
  // Lands in the sandbox's private /tmp at most (the test's DATA_DIR is below /tmp); the host's stays untouched.
  '(echo x > "/proc/1/root$TARGET_DATA_DIR/pwned-by-dockerfile") 2>/dev/null',
  '(echo x > /proc/1/root/etc/pwned-by-dockerfile) 2>/dev/null && echo WROTE-ETC || echo denied-write-etc',
  '(echo x > /proc/1/root/usr/pwned-by-dockerfile) 2>/dev/null && echo WROTE-USR || echo denied-write-usr',
  '(mknod /tmp/disk b 8 0 2>/dev/null && echo MADE-DEVICE) || echo denied-mknod',
  `(tr "\\0" "\\n" < /proc/1/environ | grep -q ${PLATFORM_ENV_MARKER} && echo READ-PLATFORM-ENV) || echo denied-platform-env`,
  'echo "visible processes $(ls /proc | grep -c "^[0-9]")"',
  'mkdir -p /www && echo hostile-but-served > /www/index.html',
].join('; \\\n    ');

const HOSTILE_DOCKERFILE = `FROM ${BASE_IMAGE}
ARG TARGET_DATA_DIR
ARG VICTIM_STORAGE
ARG VICTIM_IMAGES
RUN ${HOSTILE_RUN}
WORKDIR /www
CMD httpd -f -p $PORT -h /www
`;

let h: Harness;
const repos: TestRepo[] = [];
let victim: TestApp;
let hostile: TestApp;

beforeAll(async () => {
  if (missing) return;
  process.env.SLIPWAY_TEST_PLATFORM_MARKER = PLATFORM_ENV_MARKER;
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000 }, { jobs: true, runtime: true });
  await buildBusyboxBase(join(h.dataDir, 'containers'));
  // World-readable on purpose: only the sandbox's walls keep them out, not file modes.
  for (const [name, text] of Object.entries(DECOYS)) {
    mkdirSync(join(h.dataDir, name, '..'), { recursive: true });
    writeFileSync(join(h.dataDir, name), text, { mode: 0o644 });
  }
  // Another organization's Dockerfile application, built first: its storage and image are on disk.
  const victimRepo = new TestRepo();
  repos.push(victimRepo);
  victimRepo.commit({
    Dockerfile: `FROM ${BASE_IMAGE}\nRUN mkdir -p /www && echo victim > /www/index.html\n`,
    Procfile: 'web: httpd -f -p $PORT -h /www\n',
  });
  victim = await createApp(h, { github_repository: victimRepo.dir, auto_deploy_branch: 'main' });
  const built = await buildAndWait(h, victim);
  expect(built.log.status, built.log.log_text).toBe('built');
}, 180_000);

afterAll(async () => {
  delete process.env.SLIPWAY_TEST_PLATFORM_MARKER;
  await h?.close();
  for (const r of repos) r.remove();
});

describe.skipIf(!!missing)("a plain member's hostile Dockerfile (issue 10)", () => {
  it("cannot reach the platform's secrets, another organization's files or the host from a RUN step, and still builds a working image", async () => {
    const victimStorage = join(h.dataDir, 'containers', 'apps', victim.appId);
    const victimImages = join(h.dataDir, 'images', victim.appId);
    expect(existsSync(victimStorage) && existsSync(victimImages)).toBe(true);

    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({ Dockerfile: HOSTILE_DOCKERFILE });
    hostile = await createApp(h, {
      github_repository: repo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    for (const [name, value] of Object.entries({
      TARGET_DATA_DIR: h.dataDir,
      VICTIM_STORAGE: victimStorage,
      VICTIM_IMAGES: victimImages,
    }))
      await setConfig(h, hostile, name, value, { buildtime: true });
    const { image, deployment } = await chainDeploy(h, hostile);
    expect(image.image_metadata?.builder, JSON.stringify(image)).toBe('buildah');

    const log = (await h.app.inject({ method: 'GET', url: `/v1/images/${image.id}/log`, headers: hostile.user.headers })).json()
      .log_text as string;
    const { uid } = await h.ctx.db
      .selectFrom('sandbox_uids')
      .select('uid')
      .where('application_id', '=', hostile.appId)
      .executeTakeFirstOrThrow();
    // Root inside its own user namespace, the application's unprivileged user on the host.
    expect(log).toMatch(new RegExp(`build uid 0, host map\\s+0\\s+${uid}\\s+1`));
    const denied = [
      ...Object.keys(DECOYS).flatMap((f) => [`denied-read-${f}`, `denied-escape-${f}`]),
      'denied-list-victim',
      'denied-list-victim-image',
      'denied-write-etc',
      'denied-write-usr',
      'denied-mknod',
      'denied-platform-env',
    ];
    // Output lines only (the log also echoes the RUN command, which names every marker).
    const output = log.split('\n').filter((l) => !l.includes('STEP '));
    for (const line of denied) expect(output, `${line} in:\n${output.join('\n')}`).toContain(line);
    for (const text of Object.values(DECOYS)) expect(log).not.toContain(text);
    for (const marker of ['READ-', 'ESCAPED-', 'LISTED-', 'WROTE-', 'MADE-DEVICE']) expect(output.join('\n')).not.toContain(marker);
    const dataDirShows = /^data dir shows: (.*)$/m.exec(output.join('\n'))?.[1]?.trim().split(' ') ?? [];
    expect(
      dataDirShows.every((entry) => ['', 'builds', 'containers'].includes(entry)),
      dataDirShows.join(' '),
    ).toBe(true);
    // Its own PID namespace: buildah and its step, not the platform's processes.
    // (the build's script shell, buildah and its helpers, the step: about ten; this host runs hundreds).
    expect(Number(/visible processes (\d+)/.exec(log)?.[1])).toBeLessThan(20);
    for (const path of [join(h.dataDir, 'pwned-by-dockerfile'), '/etc/pwned-by-dockerfile', '/usr/pwned-by-dockerfile'])
      expect(existsSync(path), path).toBe(false);
    for (const [name, text] of Object.entries(DECOYS)) expect(readFileSync(join(h.dataDir, name), 'utf8')).toBe(text);

    // The image itself is fine: it deploys and serves.
    expect(deployment?.complete, deployment?.error_detail).toBe(true);
    const url = new URL(deployment.deploy_metadata.url);
    expect(await routerGet(Number(url.port), url.hostname)).toEqual({ status: 200, body: 'hostile-but-served\n' });
  }, 240_000);

  it('copies the base images a COPY --from names into its storage, but never another application image', async () => {
    const repo = new TestRepo();
    repos.push(repo);
    // A scratch image filled from the operator's base image: buildah must find that image in the application's storage.
    repo.commit({
      Dockerfile: `FROM scratch\nCOPY --from=${BASE_IMAGE} / /\nRUN mkdir -p /www && echo copied-from-base > /www/index.html\n`,
      Procfile: 'web: httpd -f -p $PORT -h /www\n',
    });
    const app = await createApp(h, { github_repository: repo.dir, auto_deploy_branch: 'main', health_check_path: '/' });
    const { deployment } = await chainDeploy(h, app);
    expect(deployment?.complete, deployment?.error_detail).toBe(true);
    const url = new URL(deployment.deploy_metadata.url);
    expect(await routerGet(Number(url.port), url.hostname)).toEqual({ status: 200, body: 'copied-from-base\n' });

    // The victim's image, named the way the platform names it, is not there to copy from.
    const { repository_name: victimRepository } = await h.ctx.db
      .selectFrom('images')
      .select('repository_name')
      .where('application_id', '=', victim.appId)
      .executeTakeFirstOrThrow();
    const thief = new TestRepo();
    repos.push(thief);
    thief.commit({
      Dockerfile: `FROM ${BASE_IMAGE}\nCOPY --from=localhost/${victimRepository}:1 /www /stolen\n`,
      Procfile: 'web: httpd -f -p $PORT -h /stolen\n',
    });
    const stealing = await createApp(h, { github_repository: thief.dir, auto_deploy_branch: 'main' });
    const built = await buildAndWait(h, stealing);
    expect(built.log.status, built.log.log_text).toBe('error');
    expect(built.log.log_text).toContain('no stage or image found');

    // A name that reads as an option is never one: no buildah command run as root outside the sandbox is given it
    // (`buildah inspect -h` prints its help and succeeds). A new application: its first build copies its bases first.
    const optionRepo = new TestRepo();
    repos.push(optionRepo);
    optionRepo.commit({ Dockerfile: `FROM ${BASE_IMAGE}\nCOPY --from=-h / /x\n` });
    const option = await buildAndWait(h, await createApp(h, { github_repository: optionRepo.dir, auto_deploy_branch: 'main' }));
    expect(option.log.status, option.log.log_text).toBe('error');
    expect(option.log.log_text).not.toMatch(/base image -h/);
  }, 240_000);
});
