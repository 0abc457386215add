import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { BuildahBuilder, BUILDAH_MISSING, createBuildahBuilder } from '../../src/platform/builder/buildah.js';
import { numericUser } from '../../src/platform/builder/image-user.js';
import { BuildError, type BuildInput, type BuildOutput } from '../../src/platform/builder/port.js';
import { SourceBuilder, chooseBuilder } from '../../src/platform/builder/index.js';
import { ImageRootDriver } from '../../src/platform/runtime/image-root/image-root-driver.js';
import { LocalProcessDriver } from '../../src/platform/runtime/local/local-driver.js';
import { addMember, seedRepository, type Repo } from './fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from './base-image.js';
import { freePort, missingBinary, run, startRegistry, type RegistryServer } from './registry-server.js';

const missing = missingBinary({
  buildah: 'buildah',
  'docker-registry': 'docker-registry',
  skopeo: 'skopeo',
  busybox: 'busybox-static',
  chroot: 'coreutils',
});
if (missing) console.warn(`[test/registry] skipping the Dockerfile build tests: ${missing}`);

const SERVICE = 'slipway-registry';
const SECRET = `tok-${randomBytes(12).toString('hex')}`;
const DOCKERFILE = `FROM ${BASE_IMAGE}
ARG GREETING
RUN --mount=type=secret,id=API_TOKEN mkdir -p /www && echo "$GREETING" > /www/index.html && \\
    wc -c < /run/secrets/API_TOKEN > /www/secret-length.txt
WORKDIR /www
ENV APP_MODE=image
CMD httpd -f -p $PORT -h /www
`;

let h: Harness;
let registry: RegistryServer;
let repo: Repo;
let member: TestUser;
let stranger: TestUser;
let work: string;
let storageRoot: string;
let built: BuildOutput;
let logLines: string[] = [];
let steps: string[] = [];

function buildInput(version: number, contextDir: string): BuildInput {
  return {
    applicationId: '00000000-0000-7000-8000-000000000000',
    version,
    repositoryName: repo.name,
    contextDir,
    artifactDir: join(work, 'artifacts', String(version)),
    buildEnv: { GREETING: 'hello from a dockerfile', API_TOKEN: SECRET },
    secrets: [SECRET],
    procfileProcesses: null,
    log: { line: (l) => void logLines.push(l), substep: (s) => steps.push(`Build ${s}`), enter: (s) => steps.push(s) },
    signal: new AbortController().signal,
    timeoutMs: 120_000,
    cacheScope: { name: 'env-test', throwaway: false },
  };
}

function writeContext(name: string, files: Record<string, string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

beforeAll(async () => {
  if (missing) return;
  work = mkdtempSync(join(tmpdir(), 'slipway-dockerfile-'));
  storageRoot = join(work, 'containers');
  const registryPort = await freePort();
  h = await createHarness({
    REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
    REGISTRY_SERVICE: SERVICE,
    BUILDAH_STORAGE_ROOT: storageRoot,
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (h.app.server.address() as { port: number }).port;
  const cert = (await h.app.inject({ method: 'GET', url: '/v1/integrations/signing-cert' })).json().certificate;
  registry = await startRegistry({
    realm: `http://127.0.0.1:${port}/v1/integrations/docker/auth`,
    service: SERVICE,
    issuer: 'slipway',
    rootCertBundle: cert,
    port: registryPort,
  });
  repo = await seedRepository(h);
  member = await h.user();
  await addMember(h, repo, member);
  stranger = await h.user();
  await buildBusyboxBase(storageRoot);
  const started = Date.now();
  built = await createBuildahBuilder(h.ctx.config).build(buildInput(1, writeContext('ctx1', { Dockerfile: DOCKERFILE })));
  console.log(`[test/registry] Dockerfile build + unpack + push: ${Date.now() - started} ms`);
});

afterAll(async () => {
  await registry?.stop();
  await h?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const buildah = (...args: string[]) =>
  run('buildah', ['--root', join(storageRoot, 'storage'), '--runroot', join(storageRoot, 'run'), '--storage-driver', 'vfs', ...args]);

describe.skipIf(!!missing)('Dockerfile builds with buildah', () => {
  it('builds with build arguments and a secret mount, and records the image', async () => {
    expect(built.imageId).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(built.dockerfile).toBe(DOCKERFILE);
    expect(built.processes).toEqual({ web: { cmd: 'httpd -f -p $PORT -h /www', env: {} } });
    expect(built.imageMetadata).toMatchObject({
      builder: 'buildah',
      dockerfile_path: 'Dockerfile',
      workdir: '/www',
      build_args: ['GREETING'],
      build_secrets: ['API_TOKEN'],
      registry_reference: `${registry.host}/${repo.name}:1`,
      manifest_digest: expect.stringMatching(/^sha256:/),
    });
    expect(steps).toEqual(['Build 1/6', 'Build 2/6', 'Build 3/6', 'Build 4/6', 'Build 5/6', 'Build 6/6', 'Export', 'Push']);
    const rootfs = join(built.artifactPath, 'rootfs');
    expect(readFileSync(join(rootfs, 'www', 'index.html'), 'utf8')).toBe('hello from a dockerfile\n');
    expect(readFileSync(join(rootfs, 'www', 'secret-length.txt'), 'utf8').trim()).toBe(String(SECRET.length)); // the RUN step read the secret
  });

  it('keeps the secret out of the image history, config, layers, metadata and log', async () => {
    const inspect = (await buildah('inspect', '--type', 'image', built.imageId)).stdout;
    expect(inspect).toContain('GREETING'); // history is there...
    expect(inspect).not.toContain(SECRET); // ...without the secret
    expect(JSON.stringify(built)).not.toContain(SECRET);
    expect(logLines.join('\n')).toContain('STEP 3/6');
    expect(logLines.join('\n')).not.toContain(SECRET);
    // What the registry holds: every blob (config, layers, unzipped) is free of it.
    const dest = join(work, 'pulled-owner');
    await run('skopeo', [
      '--insecure-policy',
      'copy',
      '--src-tls-verify=false',
      '--src-creds',
      `x:${repo.owner.apiKey}`,
      `docker://${registry.host}/${repo.name}:1`,
      `dir:${dest}`,
    ]);
    for (const f of readdirSync(dest)) {
      const raw = readFileSync(join(dest, f));
      const text = (raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString('latin1');
      expect(text, f).not.toContain(SECRET);
    }
  });

  it('lets another member pull the pushed image and refuses a non-member', async () => {
    const ok = await run('skopeo', [
      '--insecure-policy',
      'inspect',
      '--tls-verify=false',
      '--creds',
      `x:${member.apiKey}`,
      `docker://${registry.host}/${repo.name}:1`,
    ]);
    expect(JSON.parse(ok.stdout).Digest).toBe(built.imageMetadata.manifest_digest);
    await expect(
      run('skopeo', [
        '--insecure-policy',
        'inspect',
        '--tls-verify=false',
        '--creds',
        `x:${stranger.apiKey}`,
        `docker://${registry.host}/${repo.name}:1`,
      ]),
    ).rejects.toThrow(/unauthorized|authentication required|denied/i);
  });

  it('runs the image processes from the unpacked root file system', async () => {
    const driver = new ImageRootDriver(new LocalProcessDriver({ logDir: join(work, 'runtime-logs'), stopGraceMs: 2000 }));
    try {
      const status = await driver.start({
        id: '00000000-0000-7000-8000-00000000000a',
        labels: { applicationId: 'a', environmentId: 'e', releaseId: 'r', deploymentId: 'd', processType: 'web', ordinal: 1 },
        command: built.processes.web!.cmd,
        artifactPath: built.artifactPath,
        env: { RELEASE_VAR: 'x' },
        listen: true,
        secrets: [],
      });
      let body = '';
      for (let i = 0; i < 100 && !body; i++) {
        body = await fetch(`http://${status.host}:${status.port}/index.html`).then(
          (r) => (r.ok ? r.text() : ''),
          () => '',
        );
        if (!body) await new Promise((r) => setTimeout(r, 100));
      }
      expect(body).toBe('hello from a dockerfile\n');
      // One-off processes (release, postdeploy) see the image's ENV, WORKDIR and root.
      const out: string[] = [];
      const result = await driver.runOnce({
        command: 'echo "$APP_MODE $RELEASE_VAR $(pwd)" 2>/dev/null; ls / && head -c 4 /dev/urandom | wc -c',
        artifactPath: built.artifactPath,
        env: { RELEASE_VAR: 'rv' },
        secrets: [],
        timeoutMs: 10_000,
        onOutput: (l) => out.push(l),
      });
      expect(result.exitCode).toBe(0);
      expect(out[0]).toBe('image rv /www');
      expect(out).toContain('www');
      expect(out).not.toContain('usr'); // inside the image root (busybox only has /bin), not the host's
      expect(out).not.toContain('home');
      expect(out.at(-1)?.trim()).toBe('4'); // the image root has working /dev/urandom
    } finally {
      await driver.shutdown();
    }
  });

  it("runs processes as the image's USER, resolved through the image's /etc/passwd", async () => {
    const rootfs = join(work, 'user-rootfs');
    mkdirSync(join(rootfs, 'etc'), { recursive: true });
    writeFileSync(join(rootfs, 'etc', 'passwd'), 'root:x:0:0::/root:/bin/sh\napp:x:4242:4343::/home/app:/bin/sh\n');
    writeFileSync(join(rootfs, 'etc', 'group'), 'root:x:0:\nstaff:x:50:\n');
    const log = { line: () => {}, substep: () => {} };
    expect(await numericUser(rootfs, 'app', { log })).toBe('4242:4343');
    expect(await numericUser(rootfs, 'app:staff', { log })).toBe('4242:50');
    expect(await numericUser(rootfs, '1000', { log })).toBe('1000:1000');
    expect(await numericUser(rootfs, 'root', { log })).toBeNull();
    await expect(numericUser(rootfs, 'nobody-here', { log })).rejects.toThrow(/no user "nobody-here"/);
    // The image's passwd is the image author's input: an id that is not a number never reaches the command line.
    const marker = join(work, 'userspec-injected');
    writeFileSync(join(rootfs, 'etc', 'passwd'), `evil:x:0$(touch \${IFS}${marker}):0::/:/bin/sh\n`);
    await expect(numericUser(rootfs, 'evil', { log })).rejects.toThrow(BuildError);
    await expect(numericUser(rootfs, 'evil', { log })).rejects.toThrow(/non-numeric id/);
    writeFileSync(join(rootfs, 'etc', 'passwd'), 'root:x:0:0::/root:/bin/sh\napp:x:4242:4343::/home/app:/bin/sh\n');

    // The runtime applies it: a copy of the built artifact that asks for uid 4242.
    const artifact = join(work, 'artifact-as-user');
    await run('cp', ['-a', built.artifactPath, artifact]);
    const meta = JSON.parse(readFileSync(join(artifact, 'slipway-artifact.json'), 'utf8'));
    writeFileSync(join(artifact, 'slipway-artifact.json'), JSON.stringify({ ...meta, user: '4242:4343' }));
    const driver = new ImageRootDriver(new LocalProcessDriver({ logDir: join(work, 'runtime-logs-user'), stopGraceMs: 2000 }));
    try {
      const out: string[] = [];
      const result = await driver.runOnce({
        command: 'id -u; id -g',
        artifactPath: artifact,
        env: {},
        secrets: [],
        timeoutMs: 10_000,
        onOutput: (l) => out.push(l),
      });
      expect(result.exitCode).toBe(0);
      expect(out).toEqual(['4242', '4343']);
      // An artifact whose recorded user is not numeric runs nothing on the host.
      writeFileSync(join(artifact, 'slipway-artifact.json'), JSON.stringify({ ...meta, user: `1$(touch ${marker})` }));
      const refused = driver.runOnce({
        command: 'true',
        artifactPath: artifact,
        env: {},
        secrets: [],
        timeoutMs: 10_000,
        onOutput: () => {},
      });
      await expect(refused).rejects.toThrow(/image manifest of this artifact is malformed/);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await driver.shutdown();
    }
  });

  it("creates no device node through an image's /dev that links outside it (unconfined builds make /dev/null and friends as root)", async () => {
    const trap = join(work, 'devtrap');
    mkdirSync(trap);
    logLines = [];
    const dockerfile = [
      `FROM ${BASE_IMAGE} AS parts`,
      `RUN busybox mkdir -p /x && busybox cp -a /bin /x/bin && busybox ln -s ${trap} /x/dev`,
      'FROM scratch',
      'COPY --from=parts /x/ /',
      'CMD ["sleep", "1"]',
    ].join('\n');
    const out = await createBuildahBuilder(h.ctx.config).build(
      buildInput(5, writeContext('ctx-devtrap', { Dockerfile: `${dockerfile}\n` })),
    );
    expect(lstatSync(join(out.artifactPath, 'rootfs', 'dev')).isSymbolicLink()).toBe(true);
    expect(readdirSync(trap)).toEqual([]);
    expect(logLines).toContain("Note: the image's /dev is a symbolic link or not a directory: no device nodes were created in it");
    // An ordinary image gets them in its own /dev.
    expect(lstatSync(join(built.artifactPath, 'rootfs', 'dev', 'null')).isCharacterDevice()).toBe(true);
  });

  it('uses the layer cache on a rebuild, and prefers Dockerfile.slipway', async () => {
    logLines = [];
    steps = [];
    const again = await createBuildahBuilder(h.ctx.config).build(
      buildInput(2, writeContext('ctx2', { Dockerfile: 'FROM scratch\n', 'Dockerfile.slipway': DOCKERFILE })),
    );
    expect(again.imageMetadata.dockerfile_path).toBe('Dockerfile.slipway');
    expect(again.imageMetadata.cached_steps).toBeGreaterThan(0);
    expect(again.imageId).toBe(built.imageId);
  });

  it('fails a Dockerfile build with a clear message without buildah, and source builds still work', async () => {
    const noBuildah = new BuildahBuilder({ storageRoot, registry: null, buildahPath: null });
    const ctx = writeContext('ctx3', { Dockerfile: DOCKERFILE });
    const chosen = await chooseBuilder([noBuildah, new SourceBuilder(join(work, 'cache'))], ctx);
    expect(chosen).toBe(noBuildah);
    const failure = await noBuildah.build(buildInput(3, ctx)).catch((e) => e);
    expect(failure).toBeInstanceOf(BuildError);
    expect(failure.message).toBe(BUILDAH_MISSING);
    expect(failure.message).toContain('apt-get install buildah');
    const sourceCtx = writeContext('ctx4', { Procfile: 'web: echo hi\n' });
    expect((await chooseBuilder([noBuildah, new SourceBuilder(join(work, 'cache'))], sourceCtx)).name).toBe('source');
  });
});
