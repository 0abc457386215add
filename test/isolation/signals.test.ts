/**
 * Issue 27, class 6 (forged signals): a guarded release reads the edge's counters, which with
 * EDGE_DRIVER=caddy come from Caddy's access log. A member's application, deployed through the
 * real pipeline, tries to write forged 5xx lines for another organization's application into
 * that channel; garbage, an endless line and lines for unknown hosts arrive on it too. The
 * victim's guarded release passes with 0 errors counted, its counters hold only what Caddy
 * served, and every rejected line is counted.
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import type { CaddyDriver } from '../../src/platform/edge/index.js';
import { freePort, missingPackage } from '../edge/acme-pebble.js';
import { startCaddy, type CaddyProcess } from '../edge/caddy-process.js';
import { chainDeploy, deployVictim, sandboxMissing } from './fixtures.js';

const missing = sandboxMissing() ?? (missingPackage(['caddy']) ? 'the Debian package caddy is missing' : null);
if (missing) console.warn(`skipping forged signals: ${missing}`);

/** Tries every way into the access log it is told of, and reports what happened. */
const FORGER = String.raw`
import http.server, os, json, socket, urllib.parse

def attempt(fn):
    try:
        return {'ok': True, 'value': str(fn())[:200]}
    except Exception as e:
        return {'ok': False, 'error': type(e).__name__}

def forge(path, host):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    line = json.dumps({'request': {'host': host, 'method': 'GET', 'uri': '/', 'remote_ip': '192.0.2.66'}, 'status': 500, 'duration': 0.001}) + '\n'
    s.sendall((line * 2000).encode())
    s.close()
    return 'sent'

def listdir(path):
    return os.listdir(path)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        body = {'ok': True}
        if url.path == '/forge':
            body = {
                'uid': os.getuid(),
                'socket': attempt(lambda: forge(q['socket'], q['victim'])),
                'directory': attempt(lambda: listdir(q['directory'])),
            }
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

const WINDOW_SECONDS = 8;

describe.skipIf(!!missing)('forged access-log lines (EDGE_DRIVER=caddy)', () => {
  let h: Harness;
  let caddy: CaddyProcess;
  let dir: string;
  let port: number;
  const repos: TestRepo[] = [];
  let victim: TestApp;
  let forger: TestApp;
  let victimHost: string;
  let forgerHost: string;

  const driver = () => localRuntime(h.ctx).router as CaddyDriver;
  const api = async (user: TestApp['user'], method: 'GET' | 'PUT' | 'POST', url: string, payload?: object) => {
    const r = await h.app.inject({ method, url: `/v1${url}`, headers: user.headers, ...(payload ? { payload } : {}) });
    return { status: r.statusCode, body: r.body ? r.json() : undefined };
  };

  beforeAll(async () => {
    if (missing) return;
    dir = mkdtempSync(join(tmpdir(), 'slipway-signals-'));
    port = await freePort();
    caddy = await startCaddy(dir);
    h = await createHarness(
      {
        EDGE_DRIVER: 'caddy',
        CADDY_ADMIN_URL: caddy.adminUrl,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: port,
        RUNTIME_STOP_GRACE_MS: 2000,
        ROUTER_DRAIN_TIMEOUT_MS: 2000,
        REQUEST_STATS_FLUSH_MS: 200,
        GUARD_CHECK_MS: 250,
      },
      { jobs: true, runtime: true },
    );
    // The data directory world-searchable: the socket's own directory must hold alone.
    chmodSync(h.dataDir, 0o755);

    ({ app: victim, host: victimHost } = await deployVictim(h, repos));

    const forgerRepo = new TestRepo();
    repos.push(forgerRepo);
    forgerRepo.commit({ 'server.py': FORGER, Procfile: 'web: python3 server.py\n' });
    forger = await createApp(h, {
      github_repository: forgerRepo.dir,
      auto_deploy_branch: 'main',
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const f = await chainDeploy(h, forger);
    expect(f.deployment?.complete, JSON.stringify(f.deployment ?? f.image)).toBe(true);
    forgerHost = new URL(f.deployment.deploy_metadata.url).hostname;
  }, 300_000);

  afterAll(async () => {
    await h?.close();
    await caddy?.stop();
    for (const r of repos) r.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('Caddy writes to a unix socket in a platform-only directory: no loopback listener to find', async () => {
    const socket = driver().accessLogSocket;
    expect(socket).toBe(join(h.dataDir, 'edge', 'caddy-access.sock'));
    const writer = JSON.parse((await caddy.admin('/config/logging/logs/slipway_access/writer')).text);
    expect(writer).toEqual({ output: 'net', address: `unix/${socket}` });
    const directory = statSync(join(h.dataDir, 'edge'));
    expect(directory.uid).toBe(process.getuid!());
    expect(directory.mode & 0o777).toBe(0o700);
  });

  it("a member's application cannot write to the channel; forged, malformed and endless lines roll back nothing and are counted", async () => {
    const socketPath = driver().accessLogSocket;
    const r = await api(victim.user, 'PUT', `/applications/${victim.appId}/guard`, {
      window_seconds: WINDOW_SECONDS,
      max_error_ratio: 0.2,
      min_requests: 5,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const before = { ...driver().accessLogDrops };

    // The guarded redeploy of the victim, watched for WINDOW_SECONDS.
    const redeploy = chainDeploy(h, victim);
    let loadDone = false;
    const statuses: number[] = [];
    const load = (async () => {
      while (!loadDone) {
        statuses.push((await routerGet(port, victimHost, '/', 5000).catch(() => ({ status: 0 }))).status);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      const { deployment } = await redeploy;
      expect(deployment?.complete, JSON.stringify(deployment)).toBe(true);

      // The member's application tries the socket and its directory from inside its sandbox.
      const query = new URLSearchParams({ socket: socketPath, directory: join(h.dataDir, 'edge'), victim: victimHost });
      const tried = await routerGet(port, forgerHost, `/forge?${query}`, 20_000);
      expect(tried.status, tried.body).toBe(200);
      const report = JSON.parse(tried.body);
      expect(report.uid).not.toBe(0);
      expect(report.socket.ok, JSON.stringify(report)).toBe(false);
      expect(report.directory.ok, JSON.stringify(report)).toBe(false);

      // What reaches the channel anyway (it is the edge's: only this process's user can write) is checked line by line.
      const channel = connect(socketPath);
      await once(channel, 'connect');
      const write = async (text: string | Buffer) => {
        if (!channel.write(text)) await once(channel, 'drain');
      };
      const forged = (host: string, status = 500) =>
        JSON.stringify({ request: { host, method: 'GET', uri: '/', remote_ip: '192.0.2.66' }, status, duration: 0.001 });
      for (let i = 0; i < 200; i++) await write(`${forged('nobody-serves-this.example')}\n`);
      // A fully qualified spelling of the victim's name (Caddy's catch-all may answer it) pads nobody's good answers.
      for (let i = 0; i < 200; i++) await write(`${forged(`${victimHost}.`, 200)}\n`);
      for (let i = 0; i < 200; i++) await write(`{"request":{"host":"${victimHost}"},"status":"500"}\n`);
      for (let i = 0; i < 8; i++) await write(Buffer.alloc(1024 * 1024, '5'));
      await write(`\n`);
      channel.end();

      const guarded = await waitFor(
        'the guard settling',
        async () => {
          const list = (await api(victim.user, 'GET', `/applications/${victim.appId}/deployments`)).body;
          const detail = (await api(victim.user, 'GET', `/deployments/${list.items[0].id}/detail`)).body;
          return detail.guard && detail.guard.status !== 'watching' ? detail : null;
        },
        { timeout: 60_000, every: 250 },
      );
      expect(guarded.guard, JSON.stringify(guarded.guard)).toMatchObject({ status: 'passed', breach: null });
      expect(guarded.status).toBe('complete');
      expect(guarded.guard.measures.errors_5xx).toBe(0);
    } finally {
      loadDone = true;
      await load;
    }
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    // The victim's counters hold what Caddy served it, all 2xx.
    const rows = await waitFor(
      'the counters',
      async () => {
        const list = (await api(victim.user, 'GET', `/applications/${victim.appId}/observability/requests?minutes=10`)).body as Array<{
          requests: number;
          status: Record<string, number>;
        }>;
        return list.reduce((n, m) => n + m.requests, 0) >= statuses.length ? list : null;
      },
      10_000,
      100,
    );
    expect(rows.reduce((n, m) => n + m.status['5xx']!, 0)).toBe(0);
    const drops = driver().accessLogDrops;
    expect(drops.unknown_host - before.unknown_host).toBeGreaterThanOrEqual(400);
    expect(drops.malformed - before.malformed).toBeGreaterThanOrEqual(200);
    expect(drops.oversized - before.oversized).toBe(1);
    // The victim's application still answers, and the platform does.
    expect((await routerGet(port, victimHost)).body).toBe('victim ok');
    expect((await api(victim.user, 'GET', `/applications/${victim.appId}/deployments`)).status).toBe(200);
  }, 180_000);
});
