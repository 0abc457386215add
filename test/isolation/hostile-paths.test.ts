import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { buildAndWait, createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { loadDuring, type LoadReport } from '../pipeline-deploy/fixtures.js';
import { buildBusyboxBase, BASE_IMAGE } from '../registry/base-image.js';
import { missingBinary } from '../registry/registry-server.js';
import { chainDeploy, runToEnd, sandboxMissing } from './fixtures.js';

/**
 * Issue 27, class 1: privileged code never follows a path a tenant controls. A plain member's
 * repositories and builds plant symlinks where the platform (root) reads, writes or mounts:
 * a Procfile or slipway.json linked to the platform's secret key, a Dockerfile a build links
 * to the database password, a forged image manifest with its root linked to the host's `/`,
 * an image whose /dev or /etc is a symlink into a host directory, a Procfile far too large.
 * Each fails closed with a message that names the file and never its content, and another
 * organization's application serves every request meanwhile.
 */
const missing = sandboxMissing() ?? missingBinary({ buildah: 'buildah', busybox: 'busybox-static', git: 'git' });
if (missing) console.warn(`[test/isolation] skipping the hostile paths test: ${missing}`);

const DECOYS = { 'secret.key': 'SECRET-KEY-decoy-6d2a91', 'postgres.password': 'PG-PASSWORD-decoy-f03b7e' };
const HOST_PASSWD_MARKER = 'HOST-PASSWD-marker-1c9e';

/** Reports what the instance can read or write of the host: `?read=<path>&write=<dir>`. */
const PROBE_SERVER = pythonHttpApp(
  'probe(self.path)',
  String.raw`
import json, urllib.parse
def attempt(fn):
    try:
        return {'ok': True, 'value': str(fn())[:200]}
    except Exception as e:
        return {'ok': False, 'error': type(e).__name__}
def read(path):
    with open(path) as f:
        return f.read()
def write(path):
    with open(path, 'w') as f:
        f.write('pwned')
    return 'written'
def probe(path):
    q = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(path).query).items()}
    if not q:
        return 'ok'
    return json.dumps({
        'canary': attempt(lambda: read(q['canary'])),
        'write_host': attempt(lambda: write(q['write'] + '/pwned')),
        'platform_checkout': attempt(lambda: read(q['checkout'] + '/package.json')),
        'root_listing': attempt(lambda: sorted(os.listdir('/'))),
        'cwd': os.getcwd(),
    })
`,
);

let h: Harness;
const repos: TestRepo[] = [];
let victimHost: string;
let stopLoad!: () => void;
let load: Promise<LoadReport>;
/** Host directories the attacks aim at (outside /tmp, which every sandbox gets privately). */
let hostDir: string;

function repoWith(files: Record<string, string>, links: Record<string, string> = {}): TestRepo {
  const repo = new TestRepo();
  repos.push(repo);
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(repo.dir, name));
  repo.commit(files);
  return repo;
}

async function appFor(repo: TestRepo, settings: Record<string, unknown> = {}): Promise<TestApp> {
  return createApp(h, {
    github_repository: repo.dir,
    auto_deploy_branch: 'main',
    health_check_path: '/',
    deployment_timeout: 60,
    ...settings,
  });
}

async function imageDetail(t: TestApp, imageId: string) {
  return (await h.app.inject({ method: 'GET', url: `/v1/images/${imageId}/detail`, headers: t.user.headers })).json();
}

function expectNoDecoy(text: string) {
  for (const decoy of [...Object.values(DECOYS), HOST_PASSWD_MARKER]) expect(text).not.toContain(decoy);
}

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 5000 },
    { jobs: true, runtime: true },
  );
  await buildBusyboxBase(join(h.dataDir, 'containers'));
  for (const [name, text] of Object.entries(DECOYS)) writeFileSync(join(h.dataDir, name), text, { mode: 0o644 });
  // /var/tmp, not /tmp: every sandbox has a private /tmp, so only a real escape reaches this.
  hostDir = mkdtempSync('/var/tmp/slipway-hostile-paths-');
  chmodSync(hostDir, 0o755);
  mkdirSync(join(hostDir, 'devtrap'), { mode: 0o777 });
  chmodSync(join(hostDir, 'devtrap'), 0o777);
  mkdirSync(join(hostDir, 'writable'), { mode: 0o777 });
  chmodSync(join(hostDir, 'writable'), 0o777);
  mkdirSync(join(hostDir, 'etc'));
  writeFileSync(join(hostDir, 'etc', 'passwd'), `app:x:4242:4242:${HOST_PASSWD_MARKER}:/:/bin/sh\n`, { mode: 0o644 });
  writeFileSync(join(hostDir, 'canary.txt'), 'host-canary', { mode: 0o644 });

  const victimRepo = repoWith({ 'server.py': pythonHttpApp("'victim ok'"), Procfile: 'web: python3 server.py\n' });
  const victim = await appFor(victimRepo);
  const v = await chainDeploy(h, victim);
  expect(v.deployment?.complete, JSON.stringify(v.deployment ?? v.image)).toBe(true);
  victimHost = new URL(v.deployment.deploy_metadata.url).hostname;
  load = loadDuring(localRuntime(h.ctx).router.port, victimHost, new Promise<void>((r) => (stopLoad = r)), 2);
}, 240_000);

afterAll(async () => {
  stopLoad?.();
  await h?.close();
  for (const r of repos) r.remove();
  if (hostDir) rmSync(hostDir, { recursive: true, force: true });
});

describe.skipIf(!!missing)('privileged code and the paths a plain member controls (issue 27, class 1)', () => {
  it("fails a build whose Procfile or slipway.json is a symlink to the platform's secret key, without echoing it", async () => {
    const secretKey = join(h.dataDir, 'secret.key');
    const cases: Array<{ links: Record<string, string>; files: Record<string, string>; says: string }> = [
      { links: { Procfile: secretKey }, files: { 'server.py': PROBE_SERVER }, says: 'Procfile is a symbolic link' },
      // Variant: the cron manifest (read after the Procfile) linked instead.
      {
        links: { 'slipway.json': secretKey },
        files: { 'server.py': PROBE_SERVER, Procfile: 'web: python3 server.py\n' },
        says: 'slipway.json is a symbolic link',
      },
    ];
    for (const c of cases) {
      const t = await appFor(repoWith(c.files, c.links));
      const built = await buildAndWait(h, t);
      expect(built.log.status, built.log.log_text).toBe('error');
      expect(built.detail.error_detail).toContain(c.says);
      expectNoDecoy(JSON.stringify(built.detail));
      expectNoDecoy(built.log.log_text);
    }
  }, 120_000);

  it('fails a build whose Procfile is far larger than a Procfile, naming the limit only', async () => {
    const t = await appFor(repoWith({ Procfile: `web: ${'x'.repeat(2 * 1024 * 1024)}\n` }));
    const built = await buildAndWait(h, t);
    expect(built.log.status).toBe('error');
    expect(built.detail.error_detail).toBe(
      'Procfile is larger than 65536 bytes: the platform reads only regular files inside the build context',
    );
  }, 120_000);

  it("ignores a build's planted Dockerfile symlink and forged image manifest: no secret in the image, no host / for the instance", async () => {
    // The forged root's working directory is `/` and the server comes from the configuration, so on the
    // host's / (were the manifest obeyed) the process would run and report what it reached.
    const manifest = (extra: string) => `printf '{${extra}"workdir":"/","env":{},"user":null,"entrypoint":[],"cmd":[]}'`;
    const plant = [
      'ln -s "$TARGET_DATA_DIR/postgres.password" Dockerfile',
      'ln -s "$TARGET_DATA_DIR/secret.key" Dockerfile.slipway',
      // The earlier layout's manifest and this one's, with the root file system linked to the host's /.
      `${manifest('')} > slipway-image.json`,
      `${manifest('"layout":2,"kind":"image",')} > slipway-artifact.json`,
      'ln -s / rootfs',
    ].join(' && ');
    const t = await appFor(repoWith({ Procfile: 'web: python3 -c "$PROBE_CODE"\n', 'slipway.json': JSON.stringify({ build: plant }) }));
    await setConfig(h, t, 'TARGET_DATA_DIR', h.dataDir, { buildtime: true });
    await setConfig(h, t, 'PROBE_CODE', PROBE_SERVER);
    const { image, deployment } = await chainDeploy(h, t);
    expect(image.built, JSON.stringify(image)).toBe(true);
    expect(deployment?.complete, JSON.stringify(deployment)).toBe(true);
    const host = new URL(deployment.deploy_metadata.url).hostname;
    const query = new URLSearchParams({ canary: join(hostDir, 'canary.txt'), write: join(hostDir, 'writable'), checkout: resolve('.') });
    const answer = await routerGet(localRuntime(h.ctx).router.port, host, `/?${query}`);
    expect(answer.status, answer.body).toBe(200);
    const r = JSON.parse(answer.body);
    expect(r.canary).toMatchObject({ ok: false });
    expect(r.write_host).toMatchObject({ ok: false });
    expect(r.platform_checkout).toMatchObject({ ok: false });
    expect(readdirSync(join(hostDir, 'writable'))).toEqual([]);

    // On disk the planted files sit inside the member's own tree; the platform's manifest says "source".
    const { artifact_path: artifact } = await h.ctx.db
      .selectFrom('images')
      .select('artifact_path')
      .where('id', '=', image.id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(readFileSync(join(artifact!, 'slipway-artifact.json'), 'utf8'))).toEqual({ layout: 2, kind: 'source' });
    expect(lstatSync(join(artifact!, 'app', 'rootfs')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(artifact!, 'rootfs'))).toBe(false);
    expect(statSync(artifact!).mode & 0o777).toBe(0o711);
    expect(statSync(join(artifact!, 'app')).mode & 0o777).toBe(0o700);
    expect(r.cwd).toBe(join(artifact!, 'app'));
    const detail = await imageDetail(t, image.id);
    expect(detail.dockerfile).toBeNull();
    expectNoDecoy(JSON.stringify(detail));
  }, 240_000);

  it('refuses an artifact of the earlier layout that carries an image manifest, with a clear message', async () => {
    // A release stored before this layout: a source tree a build (or its running instance) could write.
    const t = await appFor(repoWith({ 'server.py': PROBE_SERVER, Procfile: 'web: python3 server.py\n' }));
    const { image, deployment } = await chainDeploy(h, t);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    const { artifact_path: artifact } = await h.ctx.db
      .selectFrom('images')
      .select('artifact_path')
      .where('id', '=', image.id)
      .executeTakeFirstOrThrow();
    const legacy = `${artifact}-legacy`;
    mkdirSync(legacy);
    writeFileSync(join(legacy, 'server.py'), PROBE_SERVER);
    writeFileSync(join(legacy, 'slipway-image.json'), JSON.stringify({ workdir: legacy, env: {}, user: null, entrypoint: [], cmd: [] }));
    symlinkSync('/', join(legacy, 'rootfs'));
    await h.ctx.db.updateTable('images').set({ artifact_path: legacy }).where('id', '=', image.id).execute();
    const { run } = await runToEnd(h, t, `cat ${join(hostDir, 'canary.txt')}`, { timeoutSeconds: 30 });
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run)).toContain('stored by an earlier Slipway');
    expect(JSON.stringify(run)).not.toContain('host-canary');
  }, 240_000);

  it('makes no device node in a host directory an image links its /dev to', async () => {
    const trap = join(hostDir, 'devtrap');
    const dockerfile = [
      `FROM ${BASE_IMAGE} AS parts`,
      `RUN busybox mkdir -p /x/www && busybox cp -a /bin /x/bin && busybox ln -s ${trap} /x/dev && echo served > /x/www/index.html`,
      'FROM scratch',
      'COPY --from=parts /x/ /',
      'ENV PATH=/bin',
    ].join('\n');
    const t = await appFor(repoWith({ Dockerfile: `${dockerfile}\n`, Procfile: 'web: httpd -f -p $PORT -h /www\n' }), {
      deployment_timeout: 10,
    });
    const { image, deployment } = await chainDeploy(h, t);
    expect(image.image_metadata?.builder, JSON.stringify(image)).toBe('buildah');
    expect(image.built, JSON.stringify(image)).toBe(true);
    const { artifact_path: artifact } = await h.ctx.db
      .selectFrom('images')
      .select('artifact_path')
      .where('id', '=', image.id)
      .executeTakeFirstOrThrow();
    expect(lstatSync(join(artifact!, 'rootfs', 'dev')).isSymbolicLink()).toBe(true);
    expect(readdirSync(trap)).toEqual([]);
    // bubblewrap will not mount the sandbox's own /dev through the link: the processes never start, the host directory stays empty.
    expect(deployment?.error_code, JSON.stringify(deployment)).toBe('crash_loop');
    expect(readdirSync(trap)).toEqual([]);
  }, 240_000);

  it('keeps running an image stored by an earlier Slipway when the platform wrote its manifest', async () => {
    const dockerfile = [
      `FROM ${BASE_IMAGE}`,
      'RUN busybox mkdir -p /www && echo ok > /www/index.html && echo legacy-image-ok > /marker.txt',
    ].join('\n');
    const t = await appFor(repoWith({ Dockerfile: `${dockerfile}\n`, Procfile: 'web: httpd -f -p $PORT -h /www\n' }));
    const { image, deployment } = await chainDeploy(h, t);
    expect(deployment?.complete, JSON.stringify(deployment ?? image)).toBe(true);
    const { artifact_path: artifact } = await h.ctx.db
      .selectFrom('images')
      .select('artifact_path')
      .where('id', '=', image.id)
      .executeTakeFirstOrThrow();
    // The earlier layout: the image manifest (written by the platform, as root) beside rootfs/.
    const { layout: _layout, kind: _kind, ...fields } = JSON.parse(readFileSync(join(artifact!, 'slipway-artifact.json'), 'utf8'));
    const legacy = `${artifact}-earlier-layout`;
    mkdirSync(legacy);
    execFileSync('cp', ['-a', join(artifact!, 'rootfs'), join(legacy, 'rootfs')]);
    writeFileSync(join(legacy, 'slipway-image.json'), JSON.stringify(fields));
    await h.ctx.db.updateTable('images').set({ artifact_path: legacy }).where('id', '=', image.id).execute();
    const { run, log } = await runToEnd(h, t, 'busybox cat /marker.txt', { timeoutSeconds: 30 });
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(log).toContain('legacy-image-ok');
  }, 240_000);

  it("refuses to resolve USER through an image's /etc linked to a host directory", async () => {
    const dockerfile = [
      `FROM ${BASE_IMAGE} AS parts`,
      `RUN busybox mkdir -p /x && busybox cp -a /bin /x/bin && busybox ln -s ${join(hostDir, 'etc')} /x/etc`,
      'FROM scratch',
      'COPY --from=parts /x/ /',
      'USER app',
      'CMD ["sleep", "1000"]',
    ].join('\n');
    const t = await appFor(repoWith({ Dockerfile: `${dockerfile}\n` }));
    const built = await buildAndWait(h, t);
    expect(built.log.status, built.log.log_text).toBe('error');
    expect(built.detail.error_detail).toContain("USER app: the image's /etc is a symbolic link");
    expectNoDecoy(JSON.stringify(built.detail));
    expectNoDecoy(built.log.log_text);
  }, 240_000);

  it("kept another organization's application serving every request throughout", async () => {
    stopLoad();
    const report = await load;
    expect(report.total).toBeGreaterThan(0);
    expect(report.failed, report.failures.slice(0, 5).join('\n')).toBe(0);
    expect(report.bodies).toEqual(['victim ok']);
  });
});
