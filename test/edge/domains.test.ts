import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { localRuntime } from '../helpers/local-runtime.js';
import { routerGet } from '../helpers/router-get.js';
import { seedApplication } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';
import { TxtServer } from '../helpers/dns-server.js';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort, missingPackage, startPebble, type Pebble } from './acme-pebble.js';
import { httpsGet, httpsLoad } from './https-client.js';

const missing = missingPackage(['pebble', 'pebble-challtestsrv', 'openssl']);
if (missing)
  console.warn(`skipping custom domains with ACME: install the Debian package ${missing === 'pebble-challtestsrv' ? 'pebble' : missing}`);

const requireHere = createRequire(import.meta.url);

/** The `ws` client (the package ships no types). */
interface WsClient {
  once(event: 'open', cb: () => void): void;
  once(event: 'message', cb: (m: unknown) => void): void;
  once(event: 'error', cb: (e: Error) => void): void;
  send(data: string): void;
  close(): void;
}
const WebSocket = requireHere('ws') as new (url: string, options: object) => WsClient;

/**
 * Answers `<version>:<GREETING>:<x-forwarded-proto>:<x-forwarded-host>`; a WebSocket on the
 * same port echoes each short text message (RFC 6455 by hand: the app runs sandboxed,
 * without the platform's node_modules).
 */
const APP = (version: string) => `
const http = require('http');
const { createHash } = require('crypto');
const server = http.createServer((req, res) => {
  res.end('${version}:' + process.env.GREETING + ':' + req.headers['x-forwarded-proto'] + ':' + req.headers['x-forwarded-host']);
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

const HOSTNAME = 'shop.example.com';

describe.skipIf(!!missing)('custom domains: ownership, ACME certificates from a local pebble, HTTPS through the edge', () => {
  let h: Harness;
  let pebble: Pebble;
  let dir: string;
  let alice: TestUser;
  let mallory: TestUser;
  let app: Deployable;
  let edgePort: number;
  let httpsPort: number;
  let root: string;
  let domainId: string;
  let dns: TxtServer;
  let malloryApp: { id: string };
  let malloryClaim: { id: string; verification: { token: string } };

  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, user: TestUser, payload?: object) =>
    h.app.inject({ method, url, headers: user.headers, ...(payload ? { payload } : {}) });

  async function deploy(version: string) {
    const releaseId = await app.release({ 'app.js': APP(version) }, 'web: node app.js\n');
    const r = await api('POST', `/v1/releases/${releaseId}/deploy`, alice);
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-acme-'));
    edgePort = await freePort();
    pebble = await startPebble(dir, edgePort);
    dns = await new TxtServer().start();
    h = await createHarness(
      {
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: edgePort,
        ROUTER_HTTPS_PORT: 0,
        ROUTER_DRAIN_TIMEOUT_MS: 5000,
        RUNTIME_STOP_GRACE_MS: 2000,
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_CA_FILE: pebble.listenerCaFile,
        ACME_EMAIL: 'ops@example.com',
        // Every certificate is inside the renewal window, so verifying again renews it now.
        ACME_RENEW_DAYS: 100_000,
        REQUEST_STATS_FLUSH_MS: 200,
        DOMAIN_DNS_SERVER: dns.address,
      },
      { jobs: true, runtime: true },
    );
    httpsPort = localRuntime(h.ctx).runtimeService.router.httpsPort!;
    root = await pebble.issuingRoot();
    alice = await h.user();
    mallory = await h.user();
    app = await deployableApp(h, alice);
    await deploy('v1');
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await pebble?.stop();
    await dns?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('claims a name, which is not served before its ownership is proven', async () => {
    const r = await api('POST', `/v1/applications/${app.appId}/domains`, alice, { hostname: 'Shop.Example.com', hsts: true });
    expect(r.statusCode, r.body).toBe(201);
    const domain = r.json();
    domainId = domain.id;
    expect(domain).toMatchObject({
      hostname: HOSTNAME,
      environment: 'production',
      verified: false,
      hsts: true,
      certificate: { status: 'none' },
    });
    expect(domain.verification).toEqual({
      method: 'dns',
      record_type: 'TXT',
      record_name: `_slipway-challenge.${HOSTNAME}`,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    });
    expect((await routerGet(edgePort, HOSTNAME)).status).toBe(404);
    // Without the TXT record there is no proof: 422 naming the record, still not served.
    const unproven = await api('POST', `/v1/applications/${app.appId}/domains/${domainId}/verify`, alice);
    expect(unproven.statusCode).toBe(422);
    expect(unproven.json().message).toContain(`no TXT record at _slipway-challenge.${HOSTNAME}`);
    expect(dns.asked).toContain(`_slipway-challenge.${HOSTNAME}`);
    expect((await routerGet(edgePort, HOSTNAME)).status).toBe(404);
    const list = await api('GET', `/v1/applications/${app.appId}/domains`, alice);
    expect(list.json().map((d: { hostname: string }) => d.hostname)).toEqual([HOSTNAME]);
  });

  it('lets another organization claim a name not yet proven, but not prove it with its own token; refuses bad and platform names; hides domains from non-members', async () => {
    const { app: other } = await seedApplication(h, mallory, { org: 'Mallory Inc', project: 'Shop', app: 'Web' });
    malloryApp = other;
    // A claim reserves nothing (a squatter cannot keep the owner out), and serves nothing.
    const squat = await api('POST', `/v1/applications/${other.id}/domains`, mallory, { hostname: HOSTNAME });
    expect(squat.statusCode, squat.body).toBe(201);
    malloryClaim = squat.json();
    expect(malloryClaim.verification.token).not.toBe(
      (await api('GET', `/v1/applications/${app.appId}/domains/${domainId}`, alice)).json().verification.token,
    );
    expect((await api('POST', `/v1/applications/${other.id}/domains`, mallory, { hostname: HOSTNAME })).statusCode).toBe(409);
    // The owner's record holds the owner's token: Mallory's claim is not proven by it.
    dns.prove(HOSTNAME, (await api('GET', `/v1/applications/${app.appId}/domains/${domainId}`, alice)).json().verification.token);
    const notHers = await api('POST', `/v1/applications/${other.id}/domains/${malloryClaim.id}/verify`, mallory);
    expect(notHers.statusCode).toBe(422);
    expect(notHers.json().message).toContain("do not hold this claim's token");
    expect((await routerGet(edgePort, HOSTNAME)).status).toBe(404);
    for (const hostname of ['not a name', 'localhost', '-x.example.com', 'web.shop.org.localhost']) {
      const bad = await api('POST', `/v1/applications/${other.id}/domains`, mallory, { hostname });
      expect(bad.statusCode, hostname).toBe(422);
    }
    expect((await api('GET', `/v1/applications/${app.appId}/domains`, mallory)).statusCode).toBe(403);
    expect((await api('POST', `/v1/applications/${app.appId}/domains/${domainId}/verify`, mallory)).statusCode).toBe(403);
    expect((await api('DELETE', `/v1/applications/${app.appId}/domains/${domainId}`, mallory)).statusCode).toBe(403);
  });

  it('proves ownership by a DNS TXT record, gets a certificate pebble signed, and serves the app over HTTPS by that name', async () => {
    const r = await api('POST', `/v1/applications/${app.appId}/domains/${domainId}/verify`, alice);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ verified: true, certificate: { status: 'pending' } });
    // Proven: nobody else can claim it, nor take it over with a claim made before (even with a record for it).
    const again = await api('POST', `/v1/applications/${malloryApp.id}/domains`, mallory, { hostname: 'SHOP.example.com.' });
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toContain('already claimed and proven');
    dns.prove(HOSTNAME, malloryClaim.verification.token);
    const takeover = await api('POST', `/v1/applications/${malloryApp.id}/domains/${malloryClaim.id}/verify`, mallory);
    expect(takeover.statusCode).toBe(409);
    expect(takeover.json().message).toContain('proven first by another application');
    const hers = (await api('GET', `/v1/applications/${malloryApp.id}/domains/${malloryClaim.id}`, mallory)).json();
    expect(hers).toMatchObject({ verified: false, certificate: { status: 'none', not_after: null } });
    const issued = await waitFor(
      'the certificate',
      async () => {
        const d = (await api('GET', `/v1/applications/${app.appId}/domains/${domainId}`, alice)).json();
        if (d.certificate.status === 'failed') throw new Error(d.certificate.error);
        return d.certificate.status === 'issued' ? d : null;
      },
      60_000,
      200,
    );
    expect(Date.parse(issued.certificate.not_after)).toBeGreaterThan(Date.now());
    await waitFor(
      'the edge to load the certificate',
      () =>
        httpsGet(httpsPort, HOSTNAME, root).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    const answer = await httpsGet(httpsPort, HOSTNAME, root);
    expect(answer.authorized).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`v1:hello:https:${HOSTNAME}`);
    expect(answer.headers['strict-transport-security']).toBe('max-age=31536000');
    // Plain HTTP for that name redirects to HTTPS; the platform name keeps serving plain HTTP.
    const plain = await routerGet(edgePort, HOSTNAME, '/x?y=1');
    expect(plain.status).toBe(308);
    const platformName = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
    expect((await routerGet(edgePort, platformName)).body).toBe(`v1:hello:http:${platformName}`);
    // A name without a certificate gets no TLS handshake.
    await expect(httpsGet(httpsPort, 'unknown.example.com', root)).rejects.toThrow();
    // Dropping the losing claim leaves the owner's name and certificate alone.
    expect((await api('DELETE', `/v1/applications/${malloryApp.id}/domains/${malloryClaim.id}`, mallory)).statusCode).toBe(200);
    expect((await httpsGet(httpsPort, HOSTNAME, root)).body).toBe(`v1:hello:https:${HOSTNAME}`);
  });

  it('carries WebSockets through the edge over HTTPS', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${httpsPort}/`, { headers: { host: HOSTNAME }, servername: HOSTNAME, ca: root });
    const reply = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send('ping'));
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    ws.close();
    expect(reply).toBe('echo ping');
  });

  it('renews the certificate under continuous HTTPS load without a failed request', async () => {
    const before = (await httpsGet(httpsPort, HOSTNAME, root)).serial;
    const renewed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      const r = await api('POST', `/v1/applications/${app.appId}/domains/${domainId}/verify`, alice);
      expect(r.json().certificate.status).toBe('pending');
      await waitFor(
        'the renewed certificate on the edge',
        async () => (await httpsGet(httpsPort, HOSTNAME, root)).serial !== before,
        60_000,
        200,
      );
      await new Promise((r) => setTimeout(r, 300));
    })();
    const report = await httpsLoad(httpsPort, HOSTNAME, root, renewed);
    await renewed;
    expect(report.failures).toEqual([]);
    expect(report.total).toBeGreaterThan(10);
    expect([...report.serials]).toContain(before);
    expect(report.serials.size).toBe(2);
  });

  it('redeploys under continuous HTTPS load with no failed request', async () => {
    const redeployed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await deploy('v2');
      await new Promise((r) => setTimeout(r, 300));
    })();
    const report = await httpsLoad(httpsPort, HOSTNAME, root, redeployed);
    await redeployed;
    expect(report.failures).toEqual([]);
    expect(report.bodies).toEqual(['v1', 'v2']);
  });

  it('counts the requests it served per application, minute and status class, readable through the API', async () => {
    for (let i = 0; i < 5; i++) expect((await httpsGet(httpsPort, HOSTNAME, root)).status).toBe(200);
    type Minute = {
      environment: string;
      process_type: string;
      requests: number;
      status: Record<string, number>;
      latency: { buckets: number[]; bounds_ms: number[] };
    };
    const rows = await waitFor(
      'the counters in PostgreSQL',
      async () => {
        const r = await api('GET', `/v1/applications/${app.appId}/observability/requests?minutes=10`, alice);
        expect(r.statusCode, r.body).toBe(200);
        const list = r.json() as Minute[];
        return list.reduce((n, m) => n + m.requests, 0) >= 5 ? list : null;
      },
      10_000,
      100,
    );
    const web = rows.filter((m) => m.process_type === 'web' && m.environment === 'production');
    const total = web.reduce((n, m) => n + m.requests, 0);
    expect(web.reduce((n, m) => n + m.status['2xx']!, 0)).toBe(total);
    for (const m of web) {
      expect(m.latency.buckets).toHaveLength(m.latency.bounds_ms.length + 1);
      expect(m.latency.buckets.reduce((a, b) => a + b, 0)).toBe(m.requests);
    }
    expect((await api('GET', `/v1/applications/${app.appId}/observability/requests`, mallory)).statusCode).toBe(403);
  });

  it('releases the name: no longer served, and free to claim again', async () => {
    expect((await api('DELETE', `/v1/applications/${app.appId}/domains/${domainId}`, alice)).statusCode).toBe(200);
    expect((await routerGet(edgePort, HOSTNAME)).status).toBe(404);
    await expect(httpsGet(httpsPort, HOSTNAME, root)).rejects.toThrow();
    const again = await api('POST', `/v1/applications/${app.appId}/domains`, alice, { hostname: HOSTNAME });
    expect(again.statusCode).toBe(201);
  });
});
