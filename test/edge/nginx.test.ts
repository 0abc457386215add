import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NginxDriver } from '../../src/platform/edge/nginx-driver.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { startPlatformProcess, type PlatformProcess } from '../helpers/platform-process.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { TxtServer } from '../helpers/dns-server.js';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort, missingPackage, startPebble, type Pebble } from './acme-pebble.js';
import { httpsGet } from './https-client.js';
import { loadThroughEdge } from './load-loop.js';

const missing = missingPackage(['nginx', 'pebble', 'pebble-challtestsrv', 'openssl']);
if (missing)
  console.warn(`skipping the nginx edge driver: install the Debian package ${missing === 'pebble-challtestsrv' ? 'pebble' : missing}`);

/** The `ws` client (the package ships no types). */
interface WsClient {
  once(event: 'open', cb: () => void): void;
  once(event: 'message', cb: (m: unknown) => void): void;
  once(event: 'error', cb: (e: Error) => void): void;
  send(data: string): void;
  close(): void;
}
const WebSocket = createRequire(import.meta.url)('ws') as new (url: string, options: object) => WsClient;

/**
 * Answers `<version>:<x-forwarded-proto>:<x-forwarded-host>:<x-forwarded-for>`; a WebSocket on the same port
 * echoes each short text message (RFC 6455 by hand: the app runs sandboxed, without the platform's node_modules).
 */
const APP = (version: string) => `
const { createHash } = require('crypto');
const server = require('http').createServer((req, res) => {
  res.end('${version}:' + req.headers['x-forwarded-proto'] + ':' + req.headers['x-forwarded-host'] + ':' + req.headers['x-forwarded-for']);
});
server.on('upgrade', (req, socket) => {
  const accept = createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  socket.on('data', (frame) => {
    if ((frame[0] & 0x0f) !== 1) return socket.end();
    const length = frame[1] & 0x7f, mask = frame.subarray(2, 6);
    const text = Buffer.from(frame.subarray(6, 6 + length).map((b, i) => b ^ mask[i % 4])).toString();
    const reply = Buffer.from('echo ' + text);
    socket.write(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
`;

const DOMAIN = 'nginx-shop.example.com';

const readProc = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

describe.skipIf(!!missing)('EDGE_DRIVER=nginx: applications served by nginx, started and reloaded by the platform', () => {
  let h: Harness;
  let dns: TxtServer;
  let pebble: Pebble;
  let alice: TestUser;
  let app: Deployable;
  let httpPort: number;
  let httpsPort: number;
  let root: string;
  let platformName: string;
  let servedUnderLoad = 0;
  let restarted: PlatformProcess | null = null;
  let nginxDir: string;
  let dir: string;

  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: alice.headers, ...(payload ? { payload } : {}) });
  /** The end of nginx's error log, for a failing expectation's message. */
  const nginxErrors = () => readFileSync(join(nginxDir, 'error.log'), 'utf8').slice(-3000);
  const driver = () => h.ctx.runtime!.router as unknown as NginxDriver;

  async function deploy(version: string) {
    const releaseId = await app.release({ 'app.js': APP(version) }, 'web: node app.js\n');
    const r = await api('POST', `/v1/releases/${releaseId}/deploy`);
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
  }

  beforeAll(async () => {
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    dns = await new TxtServer().start();
    dir = mkdtempSync(join(tmpdir(), 'slipway-nginx-'));
    pebble = await startPebble(dir, httpPort);
    h = await createHarness(
      {
        EDGE_DRIVER: 'nginx',
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: httpPort,
        ROUTER_HTTPS_PORT: httpsPort,
        ROUTER_DRAIN_TIMEOUT_MS: 5000,
        RUNTIME_STOP_GRACE_MS: 2000,
        REQUEST_STATS_FLUSH_MS: 200,
        DOMAIN_DNS_SERVER: dns.address,
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_CA_FILE: pebble.listenerCaFile,
        ACME_EMAIL: 'ops@example.com',
      },
      { jobs: true, runtime: true },
    );
    nginxDir = join(h.dataDir, 'edge', `nginx-${httpPort}`); // one directory per router port (proxy-directory.ts)
    root = await pebble.issuingRoot();
    alice = await h.user();
    app = await deployableApp(h, alice);
    await deploy('v1');
    platformName = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
  }, 90_000);

  afterAll(async () => {
    // The instance the restart test detached: the first runtime's worker still lives, so no one adopted (and stops) it.
    const shims = h ? (await h.ctx.db.selectFrom('instances').select('pid').execute()).flatMap((r) => (r.pid === null ? [] : [r.pid])) : [];
    await restarted?.stop();
    await h?.close();
    for (const pid of shims) {
      // The instance, then its shim (which would otherwise wait a minute for a platform to read its exit).
      const shim = Number(/\) \S+ (\d+)/.exec(readProc(`/proc/${pid}/stat`))?.[1]);
      for (const target of [pid, readProc(`/proc/${shim}/cmdline`).includes('instance-shim') ? shim : null])
        try {
          if (target) process.kill(target, 'SIGTERM');
        } catch {
          // stopped already
        }
    }
    await pebble?.stop();
    await dns?.close();
    // Whatever happened above, no nginx of this test outlives it.
    try {
      process.kill(Number(readFileSync(join(nginxDir, 'nginx.pid'), 'utf8')), 'SIGTERM');
    } catch {
      // stopped already
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the app at its platform name with X-Forwarded-*; an unknown name is 404; workers unprivileged, files owner-only', async () => {
    const r = await routerGet(httpPort, platformName);
    expect(r).toEqual({ status: 200, body: `v1:http:${platformName}:127.0.0.1` });
    const unknown = await routerGet(httpPort, 'nobody.localhost');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({ status: 404, message: 'No application is served at this address' });
    const master = driver().masterProcess!;
    expect(master.adopted).toBe(false);
    const children = readFileSync(`/proc/${master.pid}/task/${master.pid}/children`, 'utf8').trim().split(/\s+/);
    expect(children.length).toBeGreaterThanOrEqual(1);
    for (const pid of children) {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      if (process.getuid!() === 0) expect(uid).not.toBe(0);
    }
    expect(statSync(nginxDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(nginxDir, 'nginx.conf')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(nginxDir, 'nginx.conf'), 'utf8')).toContain('worker_processes auto;');
  });

  it("serves a verified custom domain over HTTPS with the platform's certificate (a 0600 file), HSTS, and 308 from plain HTTP", async () => {
    const created = await api('POST', `/v1/applications/${app.appId}/domains`, { hostname: DOMAIN, hsts: true });
    expect(created.statusCode, created.body).toBe(201);
    const domainId = created.json().id;
    dns.prove(DOMAIN, created.json().verification.token);
    const verified = await api('POST', `/v1/applications/${app.appId}/domains/${domainId}/verify`);
    expect(verified.statusCode, verified.body).toBe(200);
    await waitFor(
      'the certificate',
      async () => {
        const d = (await api('GET', `/v1/applications/${app.appId}/domains/${domainId}`)).json();
        if (d.certificate.status === 'failed') throw new Error(d.certificate.error);
        return d.certificate.status === 'issued';
      },
      60_000,
      200,
    );
    const answer = await waitFor('nginx to serve the certificate', () => httpsGet(httpsPort, DOMAIN, root).catch(() => null), 15_000, 100);
    expect(answer.authorized).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`v1:https:${DOMAIN}:127.0.0.1`);
    expect(answer.headers['strict-transport-security']).toBe('max-age=31536000');
    // The HTTPS port is new in this configuration (only new workers accept there): the plain one follows once the old workers stop accepting.
    const plain = await waitFor('the plain HTTP redirect', async () => {
      const r = await routerGet(httpPort, DOMAIN, '/x?y=1');
      return r.status === 308 ? r : null;
    });
    expect(plain.status).toBe(308);
    for (const file of ['certs']) expect(statSync(join(nginxDir, file)).mode & 0o777).toBe(0o700);
  });

  it('carries WebSockets through nginx over HTTPS', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${httpsPort}/`, { headers: { host: DOMAIN }, servername: DOMAIN, ca: root });
    const reply = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send('ping'));
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    ws.close();
    expect(reply).toBe('echo ping');
  });

  it('answers the maintenance page (503, Retry-After) at every name, expanding nothing of its message', async () => {
    const url = `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production/maintenance`;
    const toggle = (payload: object) => h.app.inject({ method: 'PUT', url, headers: alice.headers, payload });
    expect((await toggle({ enabled: true, message: 'Back soon $host "q" \\ {x} <i>', retry_after: 30 })).statusCode).toBe(200);
    const page = await waitFor('nginx to serve the page', async () => {
      const r = await routerGet(httpPort, platformName).catch(() => null);
      return r && r.status === 503 && r.body.includes('Back soon') ? r : null;
    });
    expect(page.body).toContain('Back soon &#36;host &quot;q&quot; \\ &#123;x&#125; &lt;i&gt;');
    const secure = await waitFor('nginx to serve the page over HTTPS', async () => {
      const r = await httpsGet(httpsPort, DOMAIN, root).catch(() => null);
      return r && r.status === 503 && r.body.includes('Back soon') ? r : null;
    });
    expect(secure.headers['retry-after']).toBe('30');
    expect((await toggle({ enabled: false })).statusCode).toBe(200);
    await waitFor('nginx to serve the app again', async () => (await routerGet(httpPort, platformName).catch(() => null))?.status === 200);
  });

  it('redeploys under continuous load (HTTP and HTTPS) with 0 failed requests', async () => {
    const redeployed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await deploy('v2');
      await new Promise((r) => setTimeout(r, 300));
    })();
    const [plain, secure] = await Promise.all([
      loadThroughEdge(httpPort, platformName, redeployed, undefined, true),
      loadThroughEdge(httpsPort, DOMAIN, redeployed, root, true),
    ]);
    // A reload closes idle kept-alive client connections: a GET racing with that close is sent again (as browsers do).
    console.log(
      `nginx switch: ${plain.total + secure.total} requests, ${plain.retriedOnReusedConnection + secure.retriedOnReusedConnection} retried on a new connection`,
    );
    await redeployed;
    expect([...plain.failures, ...secure.failures].slice(0, 5), nginxErrors()).toEqual([]);
    expect(plain.bodies).toEqual(['v1', 'v2']);
    expect(secure.bodies).toEqual(['v1', 'v2']);
    expect(plain.total + secure.total).toBeGreaterThan(20);
    servedUnderLoad = plain.total + secure.total;
  });

  it('counts the requests nginx served per application and status class from its access log, readable through the API', async () => {
    type Minute = { process_type: string; requests: number; status: Record<string, number>; latency: { buckets: number[] } };
    const rows = await waitFor(
      'the counters in PostgreSQL',
      async () => {
        const r = await api('GET', `/v1/applications/${app.appId}/observability/requests?minutes=10`);
        expect(r.statusCode, r.body).toBe(200);
        const list = r.json() as Minute[];
        return list.reduce((n, m) => n + (m.status['2xx'] ?? 0), 0) >= servedUnderLoad ? list : null;
      },
      10_000,
      100,
    );
    const sum = (f: (m: Minute) => number) => rows.reduce((n, m) => n + f(m), 0);
    expect(sum((m) => m.status['2xx']!)).toBeGreaterThanOrEqual(servedUnderLoad);
    expect(sum((m) => m.status['3xx']!)).toBeGreaterThanOrEqual(1);
    expect(sum((m) => m.status['5xx']!)).toBeGreaterThanOrEqual(1); // the maintenance page
    for (const m of rows) expect(m.latency.buckets.reduce((a, b) => a + b, 0)).toBe(m.requests);
  });

  it('keeps serving while the platform restarts, and the next platform process adopts the same nginx', async () => {
    const before = driver().masterProcess!.pid;
    const stopping = (async () => {
      h.ctx.runtime!.keepServingOnShutdown!();
      driver().keepServing();
      await h.ctx.runtime!.shutdown();
      restarted = await startPlatformProcess(h);
      await new Promise((r) => setTimeout(r, 300));
    })();
    const load = await loadThroughEdge(httpPort, platformName, stopping, undefined, true);
    await stopping;
    expect(load.failures.slice(0, 5), nginxErrors()).toEqual([]);
    const adopted = (restarted!.ctx.runtime!.router as unknown as NginxDriver).masterProcess!;
    expect(adopted).toEqual({ pid: before, adopted: true });
    expect((await routerGet(httpPort, platformName)).body).toMatch(/^v2:http:/);
  });
});
