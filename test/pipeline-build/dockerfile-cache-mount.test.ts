import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { sandboxMissing } from '../helpers/sandbox.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary, run } from '../registry/registry-server.js';
import { artifactDir } from '../../src/pipeline/build/build-runner.js';
import { buildAndWait, createApp } from './fixtures.js';

/**
 * Issue 35: `RUN --mount=type=cache` directories of a Dockerfile build survive between the
 * builds of the same application and environment (they live in its own build storage), and
 * another application's build starts with an empty one.
 */
const missing = sandboxMissing() ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static' });
let h: Harness;
const repos: TestRepo[] = [];

/**
 * The RUN after the COPY runs on every source change; it counts the builds its cache mount has seen.
 * The two RUNs before it leave a deleted file (a whiteout) and a directory replaced whole (opaque) in
 * the layers, which the export, reading the layers themselves, must show as the image does.
 */
const DOCKERFILE = `FROM ${BASE_IMAGE}
RUN mkdir -p /d && touch /d/old /gone
RUN rm /gone && rm -rf /d && mkdir /d && touch /d/new
COPY index.html /www/
RUN --mount=type=cache,target=/cache sh -c 'echo built >> /cache/builds; echo "builds seen by the cache: $(wc -l < /cache/builds)"'
CMD httpd -f -p $PORT -h /www
`;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness({}, { jobs: true });
  await buildBusyboxBase(join(h.dataDir, 'containers'));
});
afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

describe.skipIf(missing)('Dockerfile cache mounts', () => {
  it("keep their content across builds of the application, and are not another application's", async () => {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({ Dockerfile: DOCKERFILE, 'index.html': 'one' });
    const a = await createApp(h, { github_repository: repo.dir });
    const first = await buildAndWait(h, a);
    expect(first.log.error_detail).toBeNull();
    expect(first.log.log_text).toContain('builds seen by the cache: 1');
    // When each step began: the build's time splits into its steps.
    expect(first.log.log_text).toMatch(/^STEP 5\/6: RUN .* \(at \d+\.\d s\)$/m);

    // One sandboxed script builds and exports: the export is its own step in the log, timed, and
    // reads the image's layers from the storage (no working container).
    expect(first.log.log_text).toMatch(/^Unpacked the image root file system into the artifact directory in \d+\.\d s$/m);
    expect(first.log.log_text).not.toContain('through a working container');
    const rootfs = join(artifactDir(h.dataDir, a.appId, first.version), 'rootfs');
    expect(readFileSync(join(rootfs, 'www', 'index.html'), 'utf8')).toBe('one');
    expect(readdirSync(join(rootfs, 'd'))).toEqual(['new']);
    expect(existsSync(join(rootfs, 'gone'))).toBe(false);
    // BUILDAH_STORAGE_DRIVER=auto (the default): overlay where it works, else vfs and the build says why.
    const scopes = join(h.dataDir, 'containers', 'apps', a.appId, 'scopes');
    const overlay = readdirSync(scopes).some((scope) => existsSync(join(scopes, scope, 'storage-overlay', 'overlay-images')));
    expect(overlay || /^Build storage: vfs \(overlay storage does not work on this machine: .+\)$/m.test(first.log.log_text)).toBe(true);

    repo.commit({ 'index.html': 'two' });
    const second = await buildAndWait(h, a);
    expect(second.log.error_detail).toBeNull();
    expect(second.log.log_text).toContain('builds seen by the cache: 2');
    expect(readFileSync(join(artifactDir(h.dataDir, a.appId, second.version), 'rootfs', 'www', 'index.html'), 'utf8')).toBe('two');

    const other = await createApp(h, { github_repository: repo.dir });
    const separate = await buildAndWait(h, other);
    expect(separate.log.error_detail).toBeNull();
    expect(separate.log.log_text).toContain('builds seen by the cache: 1');

    // The export starts while bud removes its working container: none is left in the storage afterwards.
    const lists = readdirSync(scopes)
      .flatMap((scope) =>
        ['storage-overlay/overlay-containers', 'storage/vfs-containers'].map((dir) => join(scopes, scope, dir, 'containers.json')),
      )
      .filter((list) => existsSync(list));
    expect(lists.length).toBeGreaterThan(0);
    for (const list of lists) expect(JSON.parse(readFileSync(list, 'utf8'))).toEqual([]);
  });

  it('export the image bud built when a build step prints the line bud tags it with', async () => {
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({ Dockerfile: DOCKERFILE, 'index.html': 'one' });
    const a = await createApp(h, { github_repository: repo.dir });
    const first = await buildAndWait(h, a);
    expect(first.log.error_detail).toBeNull();
    // The line the platform starts the export on, printed by a step before bud has tagged anything.
    const tagged = `Successfully tagged localhost/${first.detail.repository_name}:${first.version + 1}`;
    repo.commit({ Dockerfile: DOCKERFILE.replace('CMD ', `RUN echo '${tagged}'\nCMD `), 'index.html': 'two' });
    const second = await buildAndWait(h, a);
    expect(second.version).toBe(first.version + 1);
    expect(second.log.error_detail).toBeNull();
    expect(second.log.log_text.split('\n').filter((l: string) => l === tagged)).toHaveLength(2);
    const rootfs = join(artifactDir(h.dataDir, a.appId, second.version), 'rootfs');
    expect(readFileSync(join(rootfs, 'www', 'index.html'), 'utf8')).toBe('two');
    expect(readdirSync(join(rootfs, 'd'))).toEqual(['new']);

    // A failing step ends the build at once: the export job still waiting for its word ends with the script.
    repo.commit({ Dockerfile: DOCKERFILE.replace('CMD ', `RUN exit 3\nCMD `), 'index.html': 'three' });
    const failed = await buildAndWait(h, a);
    expect(failed.log.error_detail).toMatch(/the Dockerfile build failed \(buildah exit code \d+\)/);
  });

  it("copy the operator's base image into the application's storage once, and again when the operator changes it", async () => {
    // Why the copy happened is said: a scope's first build copies before its script first runs.
    const copied = (why: string) =>
      new RegExp(
        `^Base image localhost/busybox-base:latest copied into this application's build storage in \\d+\\.\\d s \\(${why}\\)$`,
        'gm',
      );
    const anyCopy = /^Base image .* copied into/gm;
    const repo = new TestRepo();
    repos.push(repo);
    repo.commit({ Dockerfile: `FROM ${BASE_IMAGE}\nCOPY index.html /www/\nCMD httpd -f -p $PORT -h /www\n`, 'index.html': 'one' });
    const a = await createApp(h, { github_repository: repo.dir });
    const first = await buildAndWait(h, a);
    expect(first.log.error_detail).toBeNull();
    expect(first.log.log_text.match(anyCopy)).toHaveLength(1);
    expect(first.log.log_text.match(copied('its first build there'))).toHaveLength(1);

    repo.commit({ 'index.html': 'two' });
    const second = await buildAndWait(h, a);
    expect(second.log.error_detail).toBeNull();
    expect(second.log.log_text.match(anyCopy)).toBeNull();

    // The operator publishes a new version under the same name: the next build copies it in and builds on it.
    const shared = join(h.dataDir, 'containers');
    const buildah = (...args: string[]) =>
      run('buildah', ['--root', join(shared, 'storage'), '--runroot', join(shared, 'run'), '--storage-driver', 'vfs', ...args]);
    const container = (await buildah('from', '--pull=false', BASE_IMAGE)).stdout.trim();
    try {
      await buildah('run', '--isolation', 'chroot', container, '--', 'sh', '-c', 'echo 2 > /base-version');
      await buildah('commit', '-q', container, BASE_IMAGE);
    } finally {
      await buildah('rm', container);
    }
    repo.commit({ 'index.html': 'three' });
    const third = await buildAndWait(h, a);
    expect(third.log.error_detail).toBeNull();
    expect(third.log.log_text.match(anyCopy)).toHaveLength(1);
    expect(third.log.log_text.match(copied("the operator's image changed, or the copy was missing"))).toHaveLength(1);
    const rootfs = join(artifactDir(h.dataDir, a.appId, third.version), 'rootfs');
    expect(readFileSync(join(rootfs, 'base-version'), 'utf8')).toBe('2\n');
    expect(readFileSync(join(rootfs, 'www', 'index.html'), 'utf8')).toBe('three');
  });
});
