import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort, missingPackage, startPebble, type Pebble } from './acme-pebble.js';
import { startCaddy, type CaddyProcess } from './caddy-process.js';
import { httpsGet } from './https-client.js';

const missing = missingPackage(['caddy', 'pebble', 'pebble-challtestsrv', 'openssl']);
if (missing)
  console.warn(`skipping the Caddy edge driver: install the Debian package ${missing === 'pebble-challtestsrv' ? 'pebble' : missing}`);

/** Answers `<version>:<x-forwarded-proto>:<x-forwarded-host>`. */
const APP = (version: string) => `
require('http').createServer((req, res) => {
  res.end('${version}:' + req.headers['x-forwarded-proto'] + ':' + req.headers['x-forwarded-host']);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const DOMAIN = 'caddy-shop.example.com';

/**
 * GETs from 4 loops (2 on keep-alive connections, 2 on a new connection each) until `stop`
 * settles. Every Caddy load restarts its servers, which closes idle keep-alive connections; a
 * request sent on such a connection as it closes is retried once, as browsers and Node's own
 * documentation do (`req.reusedSocket`, RFC 9112 §9.3.1: nothing was answered, the GET is
 * idempotent). Every other error or non-200 is a failure.
 */
async function loadThroughCaddy(port: number, host: string, stop: Promise<unknown>, ca?: string) {
  const report = { total: 0, retried: 0, failures: [] as string[], bodies: [] as string[] };
  const keepAlive = ca ? new HttpsAgent({ keepAlive: true, maxSockets: 2, ca }) : new HttpAgent({ keepAlive: true, maxSockets: 2 });
  const get = (agent: HttpAgent | HttpsAgent | false) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const options = { host: '127.0.0.1', port, path: '/', headers: { host }, agent, timeout: 10_000, servername: host, ca };
      const req: ClientRequest = (ca ? httpsRequest : httpRequest)(options, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => reject(Object.assign(err, { reused: req.reusedSocket })));
      req.end();
    });
  let done = false;
  void stop.finally(() => (done = true));
  await Promise.all(
    [0, 1, 2, 3].map(async (i) => {
      while (!done) {
        report.total++;
        const agent = i % 2 === 0 ? keepAlive : false;
        try {
          const r = await get(agent).catch((err: Error & { reused?: boolean }) => {
            if (!err.reused) throw err;
            report.retried++;
            return get(agent);
          });
          if (r.status !== 200) report.failures.push(`status ${r.status}: ${r.body.slice(0, 100)}`);
          else if (!report.bodies.includes(r.body.split(':')[0]!)) report.bodies.push(r.body.split(':')[0]!);
        } catch (err) {
          report.failures.push((err as Error).message);
        }
      }
    }),
  );
  keepAlive.destroy();
  return report;
}

describe.skipIf(!!missing)('EDGE_DRIVER=caddy: applications served by Caddy, configured through its admin API', () => {
  let h: Harness;
  let caddy: CaddyProcess;
  let pebble: Pebble;
  let dir: string;
  let alice: TestUser;
  let app: Deployable;
  let httpPort: number;
  let httpsPort: number;
  let root: string;
  let platformName: string;

  const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: alice.headers, ...(payload ? { payload } : {}) });

  async function deploy(version: string) {
    const releaseId = await app.release({ 'app.js': APP(version) }, 'web: node app.js\n');
    const r = await api('POST', `/v1/releases/${releaseId}/deploy`);
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-caddy-'));
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    caddy = await startCaddy(dir);
    pebble = await startPebble(dir, httpPort);
    h = await createHarness(
      {
        EDGE_DRIVER: 'caddy',
        CADDY_ADMIN_URL: caddy.adminUrl,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: httpPort,
        ROUTER_HTTPS_PORT: httpsPort,
        ROUTER_DRAIN_TIMEOUT_MS: 5000,
        RUNTIME_STOP_GRACE_MS: 2000,
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_CA_FILE: pebble.listenerCaFile,
        ACME_EMAIL: 'ops@example.com',
        DOMAIN_CHECK_ADDRESS: '127.0.0.1',
        DOMAIN_CHECK_PORT: httpPort,
      },
      { jobs: true, runtime: true },
    );
    root = await pebble.issuingRoot();
    alice = await h.user();
    app = await deployableApp(h, alice);
    await deploy('v1');
    platformName = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;
  }, 90_000);

  afterAll(async () => {
    await h?.close();
    await caddy?.stop();
    await pebble?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the app at its platform name through Caddy; an unknown name is 404', async () => {
    const r = await routerGet(httpPort, platformName);
    expect(r).toEqual({ status: 200, body: `v1:http:${platformName}` });
    const config = await (await fetch(`${caddy.adminUrl}/config/apps/http/servers/slipway_http/listen`)).json();
    expect(config).toEqual([`127.0.0.1:${httpPort}`]);
    const unknown = await routerGet(httpPort, 'nobody.localhost');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({ status: 404, message: 'No application is served at this address' });
  });

  it('serves a verified custom domain: ownership token through Caddy, certificate from pebble, HTTPS by that name', async () => {
    const created = await api('POST', `/v1/applications/${app.appId}/domains`, { hostname: DOMAIN, hsts: true });
    expect(created.statusCode, created.body).toBe(201);
    const domainId = created.json().id;
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
    const answer = await waitFor('Caddy to serve the certificate', () => httpsGet(httpsPort, DOMAIN, root).catch(() => null), 15_000, 200);
    expect(answer.authorized).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`v1:https:${DOMAIN}`);
    expect(answer.headers['strict-transport-security']).toBe('max-age=31536000');
    // Plain HTTP for the domain redirects to HTTPS; the platform name stays plain HTTP.
    const plain = await routerGet(httpPort, DOMAIN, '/x?y=1');
    expect(plain.status).toBe(308);
    expect((await routerGet(httpPort, platformName)).status).toBe(200);
  });

  it('redeploys under continuous load through Caddy (HTTP and HTTPS) with no wrong answer; connections closed by the reload of Caddy stay under 1 %', async () => {
    const redeployed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await deploy('v2');
      await new Promise((r) => setTimeout(r, 300));
    })();
    const [plain, secure] = await Promise.all([
      loadThroughCaddy(httpPort, platformName, redeployed),
      loadThroughCaddy(httpsPort, DOMAIN, redeployed, root),
    ]);
    await redeployed;
    console.info(
      `through Caddy: ${plain.total + secure.total} requests, ${plain.retried + secure.retried} retried on a closed keep-alive connection`,
    );
    // No answer is ever wrong (no 502/503, no error page): the route switch and the drain drop nothing.
    // What Caddy 2.6.2 itself may drop is a connection racing with the load (every load restarts its
    // servers): allowed here up to 1 % of the requests and named, so the limit stays visible (docs/api-decisions.md).
    const failures = [...plain.failures, ...secure.failures];
    expect(
      failures.filter((f) => !/^(socket hang up|read ECONNRESET|connect ECONNRESET)/.test(f)),
      caddy.output().slice(-4000),
    ).toEqual([]);
    expect(failures.length).toBeLessThanOrEqual(Math.ceil((plain.total + secure.total) / 100));
    if (failures.length) console.warn(`Caddy's reload closed ${failures.length} connection(s): ${failures.join(', ')}`);
    expect(plain.bodies).toEqual(['v1', 'v2']);
    expect(secure.bodies).toEqual(['v1', 'v2']);
    expect(plain.total + secure.total).toBeGreaterThan(20);
  });
});

describe.skipIf(!!missing)('EDGE_DRIVER=caddy with EDGE_CERTIFICATES=caddy: Caddy obtains the certificate itself', () => {
  let h: Harness;
  let caddy: CaddyProcess;
  let pebble: Pebble;
  let dir: string;
  let alice: TestUser;
  let app: Deployable;
  let httpPort: number;
  let httpsPort: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-caddy-acme-'));
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    caddy = await startCaddy(dir);
    pebble = await startPebble(dir, httpPort);
    h = await createHarness(
      {
        EDGE_DRIVER: 'caddy',
        EDGE_CERTIFICATES: 'caddy',
        CADDY_ADMIN_URL: caddy.adminUrl,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: httpPort,
        ROUTER_HTTPS_PORT: httpsPort,
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_CA_FILE: pebble.listenerCaFile,
        ACME_EMAIL: 'ops@example.com',
        DOMAIN_CHECK_ADDRESS: '127.0.0.1',
        DOMAIN_CHECK_PORT: httpPort,
      },
      { jobs: true, runtime: true },
    );
    alice = await h.user();
    app = await deployableApp(h, alice);
    const releaseId = await app.release({ 'app.js': APP('v1') }, 'web: node app.js\n');
    const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
    expect(r.statusCode, r.body).toBe(202);
    expect((await settled(h, alice, r.json().deployment_id)).error).toBe(false);
  }, 90_000);

  afterAll(async () => {
    await h?.close();
    await caddy?.stop();
    await pebble?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves a verified domain over HTTPS with a certificate Caddy got from pebble; the platform requests none', async () => {
    const api = (method: 'GET' | 'POST', url: string) => h.app.inject({ method, url, headers: alice.headers });
    const created = await h.app.inject({
      method: 'POST',
      url: `/v1/applications/${app.appId}/domains`,
      headers: alice.headers,
      payload: { hostname: DOMAIN },
    });
    expect(created.statusCode, created.body).toBe(201);
    const verified = await api('POST', `/v1/applications/${app.appId}/domains/${created.json().id}/verify`);
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json().certificate.status).toBe('none');
    const root = await pebble.issuingRoot();
    const answer = await waitFor(
      'Caddy to obtain and serve the certificate',
      () => httpsGet(httpsPort, DOMAIN, root).catch(() => null),
      40_000,
      500,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${caddy.output().slice(-4000)}`);
    });
    expect(answer.authorized).toBe(true);
    expect(answer.body).toBe(`v1:https:${DOMAIN}`);
    expect(await h.ctx.db.selectFrom('certificates').selectAll().execute()).toEqual([]);
  });
});
