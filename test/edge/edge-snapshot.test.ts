import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText, parseKey, SecretBox } from '../../src/platform/crypto/secret-box.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort } from './acme-pebble.js';
import { httpsGet } from './https-client.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOMAIN = 'shop.example.test';

/**
 * An edge-role process persists what it serves (routes, a verified custom domain, its
 * certificate with the key still sealed) in DATA_DIR/edge/routes.json, and an edge started
 * with no reachable database serves all of it from its first request: the platform name over
 * HTTP, the custom domain over HTTPS with its certificate.
 */
describe('an edge serves its persisted routes, domains and certificates without a database', () => {
  let h: Harness;
  let alice: TestUser;
  let app: Deployable;
  let host: string;
  let dataDir: string;
  let certificatePem: string;
  let httpPort: number;
  let httpsPort: number;
  const keyText = generateKeyText();
  const edges: ChildProcess[] = [];

  function startEdge(databaseUrl: string) {
    const child = spawn(process.execPath, serverArgs(), {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        EDGE_DRIVER: 'builtin',
        HOME: process.env.HOME ?? '/tmp',
        SLIPWAY_ROLE: 'edge',
        DATABASE_URL: databaseUrl,
        SECRET_KEY: keyText,
        DATA_DIR: dataDir,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: String(httpPort),
        ROUTER_HTTPS_PORT: String(httpsPort),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    edges.push(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const listening = waitFor(
      'the edge process to listen',
      () => {
        if (child.exitCode !== null) throw new Error(`edge process exited ${child.exitCode}:\n${output}`);
        return output.includes('[slipway] edge role (builtin)');
      },
      60_000,
    );
    return { child, exited, listening, output: () => output };
  }

  beforeAll(async () => {
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, ROUTER_DRAIN_TIMEOUT_MS: 5000, RUNTIME_STOP_GRACE_MS: 2000 },
      { jobs: true, runtime: true },
    );
    alice = await h.user();
    app = await deployableApp(h, alice);
    const releaseId = await app.release(
      { 'app.js': `require('http').createServer((q, s) => s.end('v1')).listen(Number(process.env.PORT), '127.0.0.1');` },
      'web: node app.js\n',
    );
    const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
    host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;

    // A verified custom domain of the application with a certificate (self-signed: the client trusts it alone).
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-snapshot-'));
    const keyFile = join(dataDir, 'domain.key');
    const certFile = join(dataDir, 'domain.pem');
    execFileSync('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      `/CN=${DOMAIN}`,
      '-addext',
      `subjectAltName=DNS:${DOMAIN}`,
    ]);
    certificatePem = readFileSync(certFile, 'utf8');
    const box = new SecretBox({ current: parseKey(keyText), previous: [] });
    const now = new Date();
    await h.ctx.db
      .insertInto('domains')
      .values({
        id: uuidv7(),
        application_id: app.appId,
        environment_id: app.envId,
        hostname: DOMAIN,
        route_hostname: host,
        verification_token: 'proven',
        verified_at: now,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await h.ctx.db
      .insertInto('certificates')
      .values({
        hostname: DOMAIN,
        certificate_pem: certificatePem,
        private_key_enc: box.seal(readFileSync(keyFile, 'utf8')),
        not_after: new Date(Date.now() + 86_400_000),
      })
      .execute();
    rmSync(keyFile);
    [httpPort, httpsPort] = [await freePort(), await freePort()];
  }, 120_000);

  afterAll(async () => {
    for (const child of edges) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await h?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('persists what it serves, keys sealed, in a 0600 file', async () => {
    const edge = startEdge(h.databaseUrl);
    await edge.listening;
    const snapshot = join(dataDir, 'edge', 'routes.json');
    await waitFor('the snapshot to hold the route, the domain and its certificate', () => {
      try {
        const text = readFileSync(snapshot, 'utf8');
        // The route itself (the domain's entry names the host too, and is written as soon as the domains load).
        const routes = (JSON.parse(text) as { routes: Array<{ host: string }> }).routes;
        return routes.some((r) => r.host === host) && text.includes(DOMAIN) && text.includes('privateKeyEnc');
      } catch {
        return false;
      }
    });
    expect(statSync(snapshot).mode & 0o777).toBe(0o600);
    expect(readFileSync(snapshot, 'utf8')).not.toContain('PRIVATE KEY');
    expect(await routerGet(httpPort, host)).toEqual({ status: 200, body: 'v1' });
    expect(await httpsGet(httpsPort, DOMAIN, certificatePem)).toMatchObject({ status: 200, body: 'v1', authorized: true });
    edge.child.kill('SIGTERM');
    expect(await edge.exited).toBe(0);
  });

  it('started with its database unreachable, serves the application by its name and its custom domain over HTTPS at once', async () => {
    // A PostgreSQL address nothing answers on.
    const edge = startEdge(`postgres://slipway:unused@127.0.0.1:${await freePort()}/slipway`);
    await edge.listening;
    expect(await routerGet(httpPort, host)).toEqual({ status: 200, body: 'v1' });
    expect(await httpsGet(httpsPort, DOMAIN, certificatePem)).toMatchObject({ status: 200, body: 'v1', authorized: true });
    // The domain's settings came along: plain HTTP is redirected to HTTPS (https_redirect defaults to true).
    expect((await routerGet(httpPort, DOMAIN)).status).toBe(308);
    expect((await routerGet(httpPort, 'nobody.localhost')).status).toBe(404);
    await waitFor('the edge to say its database is unreachable', () => edge.output().includes('cannot reach its database'));
    expect(edge.child.exitCode).toBeNull();
    edge.child.kill('SIGTERM');
    expect(await edge.exited).toBe(0);
  });
});
