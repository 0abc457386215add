import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaddyDriver } from '../../src/platform/edge/caddy-driver.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { TxtServer } from '../helpers/dns-server.js';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort, missingPackage, startPebble, type Pebble } from './acme-pebble.js';
import { startCaddy, type CaddyProcess } from './caddy-process.js';
import { httpsGet } from './https-client.js';
import { loadThroughEdge } from './load-loop.js';

const missing = missingPackage(['caddy', 'pebble', 'pebble-challtestsrv', 'openssl']);
if (missing)
  console.warn(`skipping the Caddy edge driver: install the Debian package ${missing === 'pebble-challtestsrv' ? 'pebble' : missing}`);

/** Answers `<version>:<x-forwarded-proto>:<x-forwarded-host>`, after a second at `/slow`. */
const APP = (version: string) => `
require('http').createServer((req, res) => {
  const answer = () => res.end('${version}:' + req.headers['x-forwarded-proto'] + ':' + req.headers['x-forwarded-host']);
  if (req.url === '/slow') setTimeout(answer, 1000);
  else answer();
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const DOMAIN = 'caddy-shop.example.com';

describe.skipIf(!!missing)('EDGE_DRIVER=caddy: applications served by Caddy, configured through its admin API', () => {
  let h: Harness;
  let caddy: CaddyProcess;
  let dns: TxtServer;
  let pebble: Pebble;
  let dir: string;
  let alice: TestUser;
  let app: Deployable;
  let httpPort: number;
  let httpsPort: number;
  let root: string;
  let platformName: string;
  let servedUnderLoad = 0;

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
    dns = await new TxtServer().start();
    h = await createHarness(
      {
        EDGE_DRIVER: 'caddy',
        CADDY_ADMIN_URL: caddy.adminUrl,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: httpPort,
        ROUTER_HTTPS_PORT: httpsPort,
        ROUTER_DRAIN_TIMEOUT_MS: 5000,
        RUNTIME_STOP_GRACE_MS: 2000,
        REQUEST_STATS_FLUSH_MS: 200,
        ACME_DIRECTORY_URL: pebble.directoryUrl,
        ACME_CA_FILE: pebble.listenerCaFile,
        ACME_EMAIL: 'ops@example.com',
        DOMAIN_DNS_SERVER: dns.address,
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
    await dns?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the app at its platform name through Caddy; an unknown name is 404', async () => {
    const r = await routerGet(httpPort, platformName);
    expect(r).toEqual({ status: 200, body: `v1:http:${platformName}` });
    const config = JSON.parse((await caddy.admin('/config/apps/http/servers/slipway_http/listen')).text);
    expect(config).toEqual([`127.0.0.1:${httpPort}`]);
    const unknown = await routerGet(httpPort, 'nobody.localhost');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({ status: 404, message: 'No application is served at this address' });
  });

  it("keeps Caddy's admin API on its 0700-directory socket in every configuration it loads (issue 27: no admin TCP port)", async () => {
    expect(JSON.parse((await caddy.admin('/config/admin')).text)).toEqual({ listen: caddy.adminUrl, origins: ['localhost'] });
  });

  it("counts a request in flight under the instance's name-server address, as draining reads it", async () => {
    const slow = routerGet(httpPort, platformName, '/slow');
    const inflight = await waitFor(
      'Caddy to list the request in flight',
      async () => {
        const list = JSON.parse((await caddy.admin('/reverse_proxy/upstreams')).text) as Array<{
          address: string;
          num_requests: number;
        }>;
        return list.find((u) => /^127\.0\.0\.1\.addr\.slipway\.internal\.:\d+$/.test(u.address) && u.num_requests > 0) ?? null;
      },
      5000,
      50,
    );
    expect(inflight.num_requests).toBe(1);
    expect((await slow).status).toBe(200);
  });

  it('serves a verified custom domain: ownership token through Caddy, certificate from pebble, HTTPS by that name', async () => {
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

  it('answers the maintenance page at every name of the environment, expanding no placeholder from its message', async () => {
    const url = `/v1/workspaces/${app.slugs.org}/projects/${app.slugs.project}/envs/production/maintenance`;
    const toggle = (payload: object) => h.app.inject({ method: 'PUT', url, headers: alice.headers, payload });
    expect((await toggle({ enabled: true, message: 'Back soon {env.HOME} <i>', retry_after: 30 })).statusCode).toBe(200);
    const page = await waitFor('Caddy to serve the page', async () => {
      // The page, not any 503 (Caddy's own "no upstreams" while the configuration loads), nor a refused connection
      // (a configuration load restarts Caddy's servers).
      const r = await routerGet(httpPort, platformName).catch(() => null);
      if (!r) return null;
      return r.status === 503 && r.body.includes('Back soon') ? r : null;
    });
    expect(page.body).toContain('Back soon &#123;env.HOME&#125; &lt;i&gt;');
    const secure = await waitFor('Caddy to serve the page over HTTPS', async () => {
      const r = await httpsGet(httpsPort, DOMAIN, root).catch(() => null);
      return r && r.status === 503 && r.body.includes('Back soon') ? r : null;
    });
    expect(secure.headers['retry-after']).toBe('30');
    expect(secure.body).toContain('Back soon');
    expect((await toggle({ enabled: false })).statusCode).toBe(200);
    await waitFor('Caddy to serve the app again', async () => (await routerGet(httpPort, platformName).catch(() => null))?.status === 200);
  });

  it('redeploys under continuous load through Caddy (HTTP and HTTPS) with 0 failed requests and no reload of Caddy', async () => {
    const loadedBefore = (await caddy.admin('/config/')).text;
    const redeployed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await deploy('v2');
      await new Promise((r) => setTimeout(r, 300));
    })();
    const [plain, secure] = await Promise.all([
      loadThroughEdge(httpPort, platformName, redeployed),
      loadThroughEdge(httpsPort, DOMAIN, redeployed, root),
    ]);
    await redeployed;
    // No answer is wrong and no connection is closed: the route switch went through the name
    // server (Caddy's configuration, whose loads restart its servers, stayed the same) and the drain drops nothing.
    expect([...plain.failures, ...secure.failures], caddy.output().slice(-4000)).toEqual([]);
    expect((await caddy.admin('/config/')).text).toBe(loadedBefore);
    expect(plain.bodies).toEqual(['v1', 'v2']);
    expect(secure.bodies).toEqual(['v1', 'v2']);
    expect(plain.total + secure.total).toBeGreaterThan(20);
    servedUnderLoad = plain.total + secure.total;
  });

  it('counts the requests Caddy served per application and status class from its access log, readable through the API', async () => {
    type Minute = { process_type: string; requests: number; status: Record<string, number>; latency: { buckets: number[] } };
    const rows = await waitFor(
      'the counters in PostgreSQL',
      async () => {
        const r = await api('GET', `/v1/applications/${app.appId}/observability/requests?minutes=10`);
        expect(r.statusCode, r.body).toBe(200);
        const list = r.json() as Minute[];
        // 2xx alone: the maintenance test's 503s are in the same minutes and would end the wait early.
        return list.reduce((n, m) => n + (m.status['2xx'] ?? 0), 0) >= servedUnderLoad ? list : null;
      },
      10_000,
      100,
    );
    const sum = (f: (m: Minute) => number) => rows.reduce((n, m) => n + f(m), 0);
    expect(servedUnderLoad).toBeGreaterThan(0);
    expect(sum((m) => m.status['2xx']!)).toBeGreaterThanOrEqual(servedUnderLoad);
    // The custom domain's plain-HTTP redirect answered by Caddy is the application's too.
    expect(sum((m) => m.status['3xx']!)).toBeGreaterThanOrEqual(1);
    for (const m of rows) {
      expect(m.process_type).toBe('web');
      expect(m.latency.buckets.reduce((a, b) => a + b, 0)).toBe(m.requests);
    }
  });
});

describe.skipIf(!!missing)('EDGE_DRIVER=caddy with EDGE_CERTIFICATES=caddy: Caddy obtains the certificate itself', () => {
  let h: Harness;
  let caddy: CaddyProcess;
  let dns: TxtServer;
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
    dns = await new TxtServer().start();
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
        DOMAIN_DNS_SERVER: dns.address,
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
    await dns?.close();
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
    dns.prove(DOMAIN, created.json().verification.token);
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

describe.skipIf(!!missing)('EDGE_DRIVER=caddy: an admin socket other users could open is refused (issue 27)', () => {
  it('stops the edge before loading anything when the socket is writable by others in a directory they can enter', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-caddy-open-'));
    chmodSync(dir, 0o755);
    const caddy = await startCaddy(dir, { socketDirMode: 0o755 });
    const socketPath = caddy.adminUrl.slice('unix/'.length);
    chmodSync(socketPath, 0o777);
    const driver = new CaddyDriver({
      adminUrl: caddy.adminUrl,
      host: '127.0.0.1',
      port: await freePort(),
      certificates: 'platform',
      accessLogDirectory: join(dir, 'edge'),
    });
    try {
      await expect(driver.listen()).rejects.toThrow(
        `Caddy's admin socket ${socketPath} can be opened by other users of the host (socket mode 0777, directory mode 0755): give its directory mode 0700`,
      );
      // Nothing was loaded: Caddy still has only its initial configuration.
      expect(JSON.parse((await caddy.admin('/config/')).text)).toEqual({ admin: { listen: caddy.adminUrl, origins: ['localhost'] } });
    } finally {
      await driver.close();
      await caddy.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
