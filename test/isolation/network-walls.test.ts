import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { createApp, setConfig, type TestApp } from '../pipeline-build/fixtures.js';
import { loadDuring } from '../pipeline-deploy/fixtures.js';
import { waitFor } from '../helpers/wait.js';
import { chainDeploy, deployVictim, runToEnd, sandboxMissing } from './fixtures.js';

/**
 * Issue 27, class 2: each instance, build and one-off run has its own network namespace. A
 * plain member's application (deployed by the real pipeline) tries the platform's loopback
 * services (PostgreSQL, the API), another organization's instance port, the host's own
 * addresses, /proc/net/tcp and the victim's port number; all fail while the victim serves
 * with no failed request. Outbound still works: to a server the test runs in a network
 * namespace of its own, from the instance and from a build step.
 */
const missing = sandboxMissing() ?? pastaMissing();
if (missing) console.warn(missing);

function pastaMissing(): string | null {
  try {
    execFileSync('pasta', ['--version'], { stdio: 'ignore' });
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'pasta (Debian package passt) or ip (iproute2) is missing: network wall tests skipped';
  }
}

const PROBE = String.raw`
import socket, json, os, time

def connect(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        try:
            s.sendall(b'GET / HTTP/1.0\r\nHost: x\r\n\r\n')
            answer = b''
            while len(answer) < 2000:
                chunk = s.recv(2000)
                if not chunk:
                    break
                answer += chunk
            answer = answer.decode('latin1')
        except Exception:
            answer = ''
        return {'ok': True, 'answer': answer}
    except Exception as e:
        return {'ok': False, 'error': type(e).__name__}
    finally:
        s.close()

def listening_ports():
    ports = []
    for name in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(name) as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    if fields[3] == '0A':
                        ports.append(int(fields[1].split(':')[1], 16))
        except Exception:
            pass
    return sorted(set(ports))

def probe(q):
    return {
        'postgres': connect('127.0.0.1', q['pg_port']),
        'api': connect('127.0.0.1', q['api_port']),
        'api_ipv6': connect('::1', q['api_port'], socket.AF_INET6),
        'victim': connect('127.0.0.1', q['victim_port']),
        'host_address_api': connect(q['host_address'], q['api_port']),
        'host_address_victim': connect(q['host_address'], q['victim_port']),
        'outside': connect(q['outside_host'], q['outside_port']),
        'listening': listening_ports(),
    }
`;

const HOSTILE_SERVER = String.raw`
import http.server, os, json, socket, threading, urllib.parse
${PROBE}

stolen = {'bound': None, 'connections': 0}

def squat(port):
    # Binds the victim's port number and counts what reaches it.
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(('0.0.0.0', port))
        s.listen(16)
        stolen['bound'] = True
    except Exception as e:
        stolen['bound'] = type(e).__name__
        return
    while True:
        c, _ = s.accept()
        stolen['connections'] += 1
        try:
            c.sendall(b'HTTP/1.0 200 OK\r\ncontent-length: 6\r\n\r\nstolen')
        finally:
            c.close()

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        if url.path == '/probe':
            body = probe(q)
        elif url.path == '/squat':
            threading.Thread(target=squat, args=(int(q['port']),), daemon=True).start()
            time.sleep(0.3)
            body = stolen
        elif url.path == '/squatted':
            body = stolen
        elif url.path == '/build-report':
            with open('build-report.json') as f:
                body = json.load(f)
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

# 0.0.0.0 inside its namespace: as reachable through the edge as 127.0.0.1, and no further.
http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), Handler).serve_forever()
`;

/** The build step probes too (build-time variables carry the targets) and leaves its report in the artifact. */
const BUILD_PROBE = String.raw`
import json, os
${PROBE}
q = {k[len('PROBE_'):].lower(): v for k, v in os.environ.items() if k.startswith('PROBE_')}
with open('build-report.json', 'w') as f:
    json.dump(probe(q), f)
`;

/** A network namespace the test makes (a veth pair from the host) with an HTTP server in it: "the internet". */
class OutsideServer {
  readonly name = `slw${randomBytes(3).toString('hex')}`;
  readonly subnet = 16 + Math.floor(Math.random() * 200);
  readonly address = `10.213.${this.subnet}.2`;
  readonly port = 8080;
  private server: ChildProcess | null = null;

  async start() {
    const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
    const [host, peer] = [`${this.name}h`, `${this.name}n`];
    ip('netns', 'add', this.name);
    ip('link', 'add', host, 'type', 'veth', 'peer', 'name', peer);
    ip('link', 'set', peer, 'netns', this.name);
    ip('addr', 'add', `10.213.${this.subnet}.1/30`, 'dev', host);
    ip('link', 'set', host, 'up');
    ip('-n', this.name, 'addr', 'add', `${this.address}/30`, 'dev', peer);
    ip('-n', this.name, 'link', 'set', peer, 'up');
    ip('-n', this.name, 'link', 'set', 'lo', 'up');
    const script = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('content-length', '10'); self.end_headers(); self.wfile.write(b'outside-ok')
    def log_message(self, *a): pass
http.server.HTTPServer(('${this.address}', ${this.port}), H).serve_forever()`;
    this.server = spawn('ip', ['netns', 'exec', this.name, 'python3', '-c', script], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      try {
        execFileSync('curl', ['-sf', '-m', '1', `http://${this.address}:${this.port}/`], { stdio: 'pipe' });
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error('the outside server did not start');
  }

  stop() {
    this.server?.kill('SIGKILL');
    try {
      execFileSync('ip', ['netns', 'del', this.name], { stdio: 'ignore' });
    } catch {
      /* never made */
    }
  }
}

/** The host's first non-loopback IPv4 address (inside a sandbox it is the namespace's own copy). */
function hostAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no non-loopback IPv4 address');
}

let h: Harness;
const repos: TestRepo[] = [];
const outside = new OutsideServer();
let victim: TestApp;
let hostile: TestApp;
let victimHost: string;
let hostileHost: string;
let apiPort: number;
let pgPort: number;

beforeAll(async () => {
  if (missing) return;
  await outside.start();
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, RUNTIME_RESTART_BACKOFF_MS: 200 },
    { jobs: true, runtime: true },
  );
  // The API on the host's loopback, as production runs it.
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  apiPort = (h.app.server.address() as { port: number }).port;
  pgPort = Number(new URL(h.ctx.databaseUrl!).port || 5432);

  ({ app: victim, host: victimHost } = await deployVictim(h, repos));

  const hostileRepo = new TestRepo();
  repos.push(hostileRepo);
  hostileRepo.commit({
    'server.py': HOSTILE_SERVER,
    'probe.py': BUILD_PROBE,
    'slipway.json': JSON.stringify({ build: 'python3 probe.py' }),
    Procfile: 'web: python3 server.py\n',
  });
  hostile = await createApp(h, {
    github_repository: hostileRepo.dir,
    auto_deploy_branch: 'main',
    health_check_path: '/health',
    deployment_timeout: 60,
  });
  const targets = {
    PROBE_PG_PORT: String(pgPort),
    PROBE_API_PORT: String(apiPort),
    PROBE_VICTIM_PORT: String(victimPort()),
    PROBE_HOST_ADDRESS: hostAddress(),
    PROBE_OUTSIDE_HOST: outside.address,
    PROBE_OUTSIDE_PORT: String(outside.port),
  };
  for (const [name, value] of Object.entries(targets)) await setConfig(h, hostile, name, value, { buildtime: true });
  const d = await chainDeploy(h, hostile);
  expect(d.deployment?.complete, JSON.stringify(d.deployment ?? d.image)).toBe(true);
  hostileHost = new URL(d.deployment.deploy_metadata.url).hostname;
}, 300_000);

afterAll(async () => {
  await h?.close();
  outside.stop();
  for (const r of repos) r.remove();
});

/** The host loopback port the victim's web instance is reached on (the edge's upstream). */
function victimPort(): number {
  const web = localRuntime(h.ctx)
    .runtimeService.driver.list()
    .find((s) => s.labels.applicationId === victim.appId && s.port);
  return web!.port!;
}

async function hostileGet(path: string) {
  const r = await routerGet(localRuntime(h.ctx).router.port, hostileHost, path, 30_000);
  expect(r.status, r.body).toBe(200);
  return JSON.parse(r.body);
}

describe.skipIf(missing !== null)('network walls around tenant code (issue 27, class 2)', () => {
  it("an instance reaches neither the platform's loopback services nor another organization's instance, sees no host port, cannot take the victim's port; outbound works; the victim serves throughout", async () => {
    const port = victimPort();
    let stopLoad!: () => void;
    const loadStopped = new Promise<void>((r) => (stopLoad = r));
    const load = loadDuring(localRuntime(h.ctx).router.port, victimHost, loadStopped, 2);
    try {
      // The platform itself answers on these from the host: the walls, not absent services, stop the app.
      expect((await fetch(`http://127.0.0.1:${apiPort}/v1/openapi.json`)).status).toBe(200);
      expect((await routerGet(port, victimHost, '/')).body).toBe('victim ok');

      const query = new URLSearchParams({
        pg_port: String(pgPort),
        api_port: String(apiPort),
        victim_port: String(port),
        host_address: hostAddress(),
        outside_host: outside.address,
        outside_port: String(outside.port),
      });
      const r = await hostileGet(`/probe?${query}`);
      for (const key of ['postgres', 'api', 'api_ipv6', 'victim', 'host_address_api', 'host_address_victim']) {
        expect(r[key], key).toMatchObject({ ok: false });
      }
      expect(r.outside).toMatchObject({ ok: true });
      expect(r.outside.answer).toContain('outside-ok');
      // /proc/net/tcp is its own namespace's: nothing of the host's listening ports.
      for (const hostPort of [pgPort, apiPort, port, localRuntime(h.ctx).router.port]) expect(r.listening).not.toContain(hostPort);

      // It binds the victim's port number (in its own namespace, so it may) and catches nothing.
      const squat = await hostileGet(`/squat?port=${port}`);
      expect(squat.bound).toBe(true);
      for (let i = 0; i < 20; i++) expect((await routerGet(localRuntime(h.ctx).router.port, victimHost, '/')).body).toBe('victim ok');
      expect((await routerGet(port, victimHost, '/')).body).toBe('victim ok');
      expect((await hostileGet('/squatted')).connections).toBe(0);
    } finally {
      stopLoad();
    }
    const report = await load;
    expect(report.failed, report.failures.slice(0, 5).join('; ')).toBe(0);
    expect(report.total).toBeGreaterThan(10);
    expect(report.bodies).toEqual(['victim ok']);
  }, 120_000);

  it('a build step has the same walls and the same way out', async () => {
    const r = await hostileGet('/build-report');
    for (const key of ['postgres', 'api', 'api_ipv6', 'victim', 'host_address_api', 'host_address_victim']) {
      expect(r[key], key).toMatchObject({ ok: false });
    }
    expect(r.outside).toMatchObject({ ok: true });
    expect(r.outside.answer).toContain('outside-ok');
    expect(r.listening).toEqual([]);
  });

  it("a site administrator turns an organization's outbound off (PUT pipeline-limits): its next one-off run reaches nothing outside; a plain member may not", async () => {
    const url = `/v1/organizations/${hostile.orgSlug}/pipeline-limits`;
    const denied = await h.app.inject({ method: 'PUT', url, headers: hostile.user.headers, payload: { outbound: false } });
    expect(denied.statusCode).toBe(403);
    const admin = await h.user({ admin: true });
    const off = await h.app.inject({ method: 'PUT', url, headers: admin.headers, payload: { outbound: false } });
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json()).toMatchObject({ outbound: false, effective_outbound: false });

    const probe = (name: string, host: string, port: number) =>
      `python3 -c "import socket; s=socket.socket(); s.settimeout(2); print('${name}', s.connect_ex(('${host}', ${port})) == 0)"`;
    const command = [probe('outside', outside.address, outside.port), probe('api', '127.0.0.1', apiPort)].join('; ');
    try {
      const { log } = await runToEnd(h, hostile, command);
      expect(log).toContain('outside False');
      expect(log).toContain('api False');
      // Its web instance, started before, keeps its forward: the edge still reaches it.
      expect(await hostileGet('/health')).toEqual({ ok: true });
    } finally {
      const back = await h.app.inject({ method: 'PUT', url, headers: admin.headers, payload: { outbound: null } });
      expect(back.json()).toMatchObject({ outbound: null, effective_outbound: true });
    }
  }, 90_000);

  it('an instance whose network helper (pasta) ends is restarted with a new one and serves again through the edge', async () => {
    const driver = localRuntime(h.ctx).runtimeService.driver;
    const before = driver.list().find((st) => st.labels.applicationId === hostile.appId && st.port)!;
    const forward = `127.0.0.1/${before.port}:${before.port}`;
    const pasta = readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .find((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(forward);
        } catch {
          return false;
        }
      });
    expect(pasta, 'the instance has its pasta').toBeDefined();
    process.kill(Number(pasta), 'SIGKILL');
    await waitFor('the restart', async () => (driver.status(before.id)!.restartCount > before.restartCount ? true : null), 30_000, 100);
    const served = await waitFor(
      'the instance to answer again',
      async () => {
        const r = await routerGet(localRuntime(h.ctx).router.port, hostileHost, '/health', 5000).catch(() => null);
        return r?.status === 200 ? r : null;
      },
      30_000,
      200,
    );
    expect(JSON.parse(served.body)).toEqual({ ok: true });
    expect(driver.status(before.id)!.lastExit).toBe('signal SIGKILL');
  }, 90_000);
});
