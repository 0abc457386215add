import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { loadDuring } from '../pipeline-deploy/fixtures.js';
import { chainDeploy, runToEnd, sandboxMissing } from './fixtures.js';

/**
 * Issue 10's proof: a plain member deploys, through the real pipeline, an application that
 * attacks the platform and another organization's application from its build and from its
 * running instance. Every attempt fails, the other organization's application keeps
 * serving with no failed request, and the memory hog is recorded with its reason.
 */
const missing = sandboxMissing();
if (missing) console.warn(missing);

const PIDS_MAX = 128;
const VICTIM_TOKEN = 'victim-secret-7c1e94';
const DECOYS = {
  'secret.key': 'SECRET-KEY-decoy-0b6e',
  'postgres.password': 'PG-PASSWORD-decoy-91d2',
  'registry/token-signing.pem': 'SIGNING-KEY-decoy-55af',
};

const HOSTILE_SERVER = String.raw`
import http.server, os, json, signal, subprocess, urllib.parse

def attempt(fn):
    try:
        return {'ok': True, 'value': str(fn())[:200]}
    except Exception as e:
        return {'ok': False, 'error': type(e).__name__}

def read(path):
    with open(path, 'rb') as f:
        return f.read().decode('latin1')

def write(path):
    with open(path, 'w') as f:
        f.write('pwned')
    return 'written'

def environments_containing(needle):
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                if needle in read('/proc/%s/environ' % pid):
                    found.append(pid)
            except Exception:
                pass
    return found

def signal_each(pids):
    return {pid: attempt(lambda: os.kill(int(pid), signal.SIGKILL)) for pid in pids}

FORK_BOMB = '''
import os, time, errno
n = 0
try:
    while n < 100000:
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, errno.errorcode.get(e.errno))
'''

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        if url.path == '/attack':
            data = q['data']
            body = {
                'uid': os.getuid(),
                'secret_key': attempt(lambda: read(data + '/secret.key')),
                'postgres_password': attempt(lambda: read(data + '/postgres.password')),
                'signing_key': attempt(lambda: read(data + '/registry/token-signing.pem')),
                'data_dir': attempt(lambda: os.listdir(data)),
                'images_dir': attempt(lambda: os.listdir(data + '/images')),
                'victim_environ': attempt(lambda: read('/proc/%s/environ' % q['pid'])),
                'environments_with_victim_token': environments_containing(q['needle']),
                'visible_pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
                'victim_file': attempt(lambda: read(q['victim_dir'] + '/server.py')),
                'victim_dir': attempt(lambda: os.listdir(q['victim_dir'])),
                'signal_victim': signal_each(q['pids'].split(',')),
                'checkout': attempt(lambda: read(q['checkout'] + '/package.json')),
                'root_home': attempt(lambda: os.listdir('/root')),
                'write_usr': attempt(lambda: write('/usr/pwned')),
                'write_etc': attempt(lambda: write('/etc/pwned')),
                'write_root': attempt(lambda: write('/pwned')),
                'write_data': attempt(lambda: write(data + '/pwned')),
                'write_victim': attempt(lambda: write(q['victim_dir'] + '/pwned')),
                'write_tmp': attempt(lambda: write('/tmp/mine')),
                'write_own': attempt(lambda: write('own-file')),
                'build_report': read('build-report.txt'),
            }
        elif url.path == '/fork-bomb':
            out = subprocess.run(['python3', '-c', FORK_BOMB], capture_output=True, text=True, timeout=120)
            body = {'out': out.stdout.strip(), 'err': out.stderr[-300:]}
        elif url.path == '/signal-everything':
            os.kill(-1, signal.SIGKILL)
            body = {'survived': True}
        elif url.path == '/hog':
            chunks = []
            while True:
                chunks.append(b'x' * (16 * 1024 * 1024))
        else:
            body = {'ok': True}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

/** The build, too, tries to read the secret key and write into the data directory. */
const HOSTILE_BUILD = [
  'id -u > build-report.txt',
  'cat "$TARGET_DATA_DIR/secret.key" >> build-report.txt 2>&1 || echo build-could-not-read >> build-report.txt',
  '(echo x > "$TARGET_DATA_DIR/pwned-by-build") 2>/dev/null',
  '(echo x > /etc/pwned-by-build) 2>/dev/null || echo build-could-not-write >> build-report.txt',
].join('; ');

let h: Harness;
const repos: TestRepo[] = [];
let victim: TestApp;
let hostile: TestApp;
let victimHost: string;
let hostileHost: string;

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      ROUTER_DRAIN_TIMEOUT_MS: 5000,
      RUNTIME_RESTART_BACKOFF_MS: 200,
      SANDBOX_PIDS_MAX: PIDS_MAX,
    },
    { jobs: true, runtime: true },
  );
  // World-readable on purpose: only the sandbox's walls keep them out, not file modes.
  for (const [name, text] of Object.entries(DECOYS)) {
    mkdirSync(join(h.dataDir, name, '..'), { recursive: true });
    writeFileSync(join(h.dataDir, name), text, { mode: 0o644 });
  }

  const victimRepo = new TestRepo();
  repos.push(victimRepo);
  victimRepo.commit({ 'server.py': pythonHttpApp("'victim ok'"), Procfile: 'web: python3 server.py\n' });
  victim = await createApp(h, {
    github_repository: victimRepo.dir,
    auto_deploy_branch: 'main',
    health_check_path: '/',
    deployment_timeout: 60,
  });
  await setConfig(h, victim, 'VICTIM_TOKEN', VICTIM_TOKEN, { secret: true });
  const v = await chainDeploy(h, victim);
  expect(v.deployment?.complete, JSON.stringify(v.deployment ?? v.image)).toBe(true);
  victimHost = new URL(v.deployment.deploy_metadata.url).hostname;

  const hostileRepo = new TestRepo();
  repos.push(hostileRepo);
  hostileRepo.commit({
    'server.py': HOSTILE_SERVER,
    'slipway.json': JSON.stringify({ build: HOSTILE_BUILD }),
    Procfile: 'web: python3 server.py\n',
  });
  hostile = await createApp(h, {
    github_repository: hostileRepo.dir,
    auto_deploy_branch: 'main',
    health_check_path: '/health',
    deployment_timeout: 60,
  });
  const scaled = await h.app.inject({
    method: 'POST',
    url: `/v1/applications/${hostile.appId}/scale`,
    headers: hostile.user.headers,
    payload: { process_pod_classes: { web: 'm1.small' } },
  });
  expect(scaled.statusCode, scaled.body).toBe(200);
  await setConfig(h, hostile, 'TARGET_DATA_DIR', h.dataDir, { buildtime: true });
  const d = await chainDeploy(h, hostile);
  expect(d.deployment?.complete, JSON.stringify(d.deployment ?? d.image)).toBe(true);
  hostileHost = new URL(d.deployment.deploy_metadata.url).hostname;
}, 300_000);

afterAll(async () => {
  await h?.close();
  for (const r of repos) r.remove();
});

/** Host pids of the victim's instance: its launcher and everything in its process group. */
function victimPids(environmentId: string): string[] {
  const leader = localRuntime(h.ctx)
    .instancesOf(victim.appId, environmentId)
    .find((s) => s.pid)!.pid!;
  const pids = [String(leader)];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgrp === leader && entry !== String(leader)) pids.push(entry);
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** The cpu, memory and pids limits of the control group a process is in (cgroup v1 or v2). */
function cgroupLimits(pid: number): { cpu: string; memory: string; pids: string } {
  const groups = new Map<string, string>();
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line)!;
    for (const c of controllers!.split(',')) groups.set(c, path!);
  }
  const read = (file: string) => readFileSync(file, 'utf8').trim();
  if (groups.has('memory')) {
    const v1 = (controller: string, file: string) => read(join('/sys/fs/cgroup', controller, groups.get(controller)!, file));
    return {
      cpu: `${v1('cpu', 'cpu.cfs_quota_us')} ${v1('cpu', 'cpu.cfs_period_us')}`,
      memory: v1('memory', 'memory.limit_in_bytes'),
      pids: v1('pids', 'pids.max'),
    };
  }
  const v2 = (file: string) => read(join('/sys/fs/cgroup', groups.get('')!, file));
  return { cpu: v2('cpu.max'), memory: v2('memory.max'), pids: v2('pids.max') };
}

async function hostileGet(path: string, timeoutMs = 60_000) {
  return routerGet(localRuntime(h.ctx).router.port, hostileHost, path, timeoutMs);
}

describe.skipIf(missing !== null)('a hostile application of a plain member (issue 10)', () => {
  it('cannot reach secrets, other organizations, or the system; its fork bomb and memory hog stay inside; the victim serves throughout', async () => {
    const victimEnvId = (
      await h.ctx.db
        .selectFrom('environments')
        .select('id')
        .where('project_id', '=', victim.projectId)
        .where('slug', '=', 'production')
        .executeTakeFirstOrThrow()
    ).id;
    const victimImage = await h.ctx.db
      .selectFrom('images')
      .select('artifact_path')
      .where('application_id', '=', victim.appId)
      .executeTakeFirstOrThrow();
    const victimDir = victimImage.artifact_path!;
    const pids = victimPids(victimEnvId);
    expect(pids.length).toBeGreaterThan(1);

    let stopLoad!: () => void;
    const loadStopped = new Promise<void>((r) => {
      stopLoad = r;
    });
    const load = loadDuring(localRuntime(h.ctx).router.port, victimHost, loadStopped, 2);
    try {
      // 1. Reading, signalling and writing.
      const query = new URLSearchParams({
        data: h.dataDir,
        pid: pids[0]!,
        pids: pids.join(','),
        needle: VICTIM_TOKEN,
        victim_dir: victimDir,
        checkout: resolve('.'),
      });
      const attack = await hostileGet(`/attack?${query}`);
      expect(attack.status).toBe(200);
      const r = JSON.parse(attack.body);
      expect(r.uid).toBeGreaterThanOrEqual(200000);
      // DATA_DIR is not there: only the empty folders leading to its own directory (which it knows: its cwd).
      expect(r.data_dir).toEqual({ ok: true, value: "['images']" });
      expect(r.images_dir).toEqual({ ok: true, value: `['${hostile.appId}']` });
      for (const key of [
        'secret_key',
        'postgres_password',
        'signing_key',
        'victim_environ',
        'victim_file',
        'victim_dir',
        'checkout',
        'root_home',
        'write_usr',
        'write_etc',
        'write_root',
        'write_victim',
      ]) {
        expect(r[key], key).toMatchObject({ ok: false });
      }
      for (const [pid, result] of Object.entries(r.signal_victim)) expect(result, `kill ${pid}`).toMatchObject({ ok: false });
      expect(r.environments_with_victim_token).toEqual([]);
      // Its own PID namespace: only its own few processes, none of the host's.
      expect(Math.max(...r.visible_pids)).toBeLessThan(1000);
      for (const pid of pids) expect(r.visible_pids).not.toContain(Number(pid));
      expect(r.write_tmp).toMatchObject({ ok: true });
      expect(r.write_own).toMatchObject({ ok: true });
      // The build ran as the same unprivileged user and could neither read nor write the data directory.
      const [buildUid, ...buildLines] = r.build_report.trim().split('\n');
      expect(Number(buildUid)).toBe(r.uid);
      expect(buildLines.join('\n')).toContain('build-could-not-read');
      expect(buildLines.join('\n')).toContain('build-could-not-write');
      expect(r.build_report).not.toContain(DECOYS['secret.key']);
      expect(JSON.stringify(r)).not.toMatch(/decoy|victim-secret/);
      // The test's DATA_DIR lies below /tmp, which is the sandbox's private tmpfs: a write there
      // lands in that throwaway /tmp, never in the real folder.
      expect(existsSync(join(h.dataDir, 'pwned'))).toBe(false);
      expect(existsSync(join(h.dataDir, 'pwned-by-build'))).toBe(false);
      expect(existsSync(join(victimDir, 'pwned'))).toBe(false);
      expect(existsSync('/usr/pwned')).toBe(false);
      expect(existsSync('/etc/pwned-by-build')).toBe(false);

      // A one-off run (POST /applications/{id}/runs) gets the same walls.
      const command = [
        'echo "run-uid=$(id -u)"',
        `cat ${h.dataDir}/secret.key 2>/dev/null || echo run-could-not-read`,
        `kill -9 ${pids.join(' ')} 2>/dev/null || echo run-could-not-signal`,
        `cat /proc/${pids[0]}/environ 2>/dev/null || echo run-could-not-see`,
      ].join('; ');
      const { log: runLog } = await runToEnd(h, hostile, command);
      expect(runLog).toContain(`run-uid=${r.uid}`);
      for (const line of ['run-could-not-read', 'run-could-not-signal', 'run-could-not-see']) expect(runLog).toContain(line);
      expect(runLog).not.toContain(DECOYS['secret.key']);

      // The pod class's limits are the kernel's: m1.small is 250 millicores and 384 MiB.
      const hostileEnvId = (
        await h.ctx.db
          .selectFrom('instances')
          .select('environment_id')
          .where('application_id', '=', hostile.appId)
          .executeTakeFirstOrThrow()
      ).environment_id;
      const hostilePid = localRuntime(h.ctx)
        .instancesOf(hostile.appId, hostileEnvId)
        .find((s) => s.pid)!.pid!;
      expect(cgroupLimits(hostilePid)).toEqual({ cpu: '25000 100000', memory: String(384 * 1024 * 1024), pids: String(PIDS_MAX) });

      // 2. Forking without bound stops at the pids limit.
      const bomb = JSON.parse((await hostileGet('/fork-bomb', 120_000)).body);
      const [forked, errno] = bomb.out.split(' ');
      expect(errno, JSON.stringify(bomb)).toBe('EAGAIN');
      expect(Number(forked)).toBeLessThan(PIDS_MAX);

      // 3. Signalling every process it can: only its own sandbox dies (and is restarted).
      await hostileGet('/signal-everything', 10_000).catch(() => null);
      await waitFor(
        'the hostile app to come back',
        async () => (await hostileGet('/health', 2000).catch(() => null))?.status === 200,
        60_000,
        200,
      );

      // 4. Allocating past m1.small's 384 MiB: killed by the kernel, recorded as an OOM crash.
      const deployments = (
        await h.app.inject({ method: 'GET', url: `/v1/applications/${hostile.appId}/deployments`, headers: hostile.user.headers })
      ).json();
      // Sent again while no crash shows: once, under CI load, no crash showed within 60 s after a single
      // hog (cause not found; e.g. a hog answered by an instance still rejoining the route after step 3).
      // Each answer is kept for the failure message.
      const hogAnswers: unknown[] = [];
      let crashes: Array<{ reason: string }> = [];
      let hog: Promise<unknown> | null = null;
      const crash = await waitFor(
        'the OOM crash on the deployment record',
        async () => {
          hog ??= hostileGet('/hog', 60_000)
            .then(
              (r) => hogAnswers.push(r.status),
              (err: Error) => hogAnswers.push(err.message),
            )
            .finally(() => (hog = null));
          const detail = (
            await h.app.inject({ method: 'GET', url: `/v1/deployments/${deployments.items[0].id}/detail`, headers: hostile.user.headers })
          ).json();
          crashes = detail.deploy_metadata?.crashes ?? [];
          return crashes.find((c) => c.reason.startsWith('OOM'));
        },
        60_000,
        200,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; hog answers ${JSON.stringify(hogAnswers)}, crashes ${JSON.stringify(crashes)}`);
      });
      await hog;
      expect(crash).toMatchObject({ process: 'web.1', reason: 'OOM: exceeded 384 MiB of m1.small' });
      const instance = await h.ctx.db
        .selectFrom('instances')
        .select('last_exit')
        .where('application_id', '=', hostile.appId)
        .executeTakeFirstOrThrow();
      expect(instance.last_exit).toBe('OOM: exceeded 384 MiB of m1.small');
      // The crash is the hostile organization's business only.
      const other = await h.app.inject({
        method: 'GET',
        url: `/v1/deployments/${deployments.items[0].id}/detail`,
        headers: victim.user.headers,
      });
      expect(other.statusCode).toBe(403);
    } finally {
      stopLoad();
    }
    const report = await load;
    console.log(`victim under attack: ${report.total} requests, ${report.failed} failed`, report.failures.slice(0, 3));
    expect(report.total).toBeGreaterThan(20);
    expect(report.failed).toBe(0);
    expect(report.bodies).toEqual(['victim ok']);
  }, 300_000);
});
