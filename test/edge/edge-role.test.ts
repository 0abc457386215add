import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { deployableApp, loadDuring, settled, type Deployable } from '../pipeline-deploy/fixtures.js';
import { freePort } from './acme-pebble.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * `SLIPWAY_ROLE=edge`: a separate Slipway process that only serves applications, with the
 * routes the worker (this test process) publishes in PostgreSQL.
 */
describe('an edge-role process serves what another process deployed', () => {
  let h: Harness;
  let alice: TestUser;
  let app: Deployable;
  let edge: ChildProcess;
  let edgeOutput = '';
  let edgePort: number;
  let dataDir: string;
  let host: string;

  async function deploy(version: string) {
    const releaseId = await app.release(
      { 'app.js': `require('http').createServer((q, s) => s.end('${version}')).listen(Number(process.env.PORT), '127.0.0.1');` },
      'web: node app.js\n',
    );
    const r = await h.app.inject({ method: 'POST', url: `/v1/releases/${releaseId}/deploy`, headers: alice.headers });
    expect(r.statusCode, r.body).toBe(202);
    const d = await settled(h, alice, r.json().deployment_id);
    expect(d.error, JSON.stringify(d)).toBe(false);
  }

  beforeAll(async () => {
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, ROUTER_DRAIN_TIMEOUT_MS: 5000, RUNTIME_STOP_GRACE_MS: 2000 },
      { jobs: true, runtime: true },
    );
    alice = await h.user();
    app = await deployableApp(h, alice);
    await deploy('v1');
    host = `${app.slugs.app}.${app.slugs.project}.${app.slugs.org}.localhost`;

    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-role-'));
    edgePort = await freePort();
    edge = spawn(process.execPath, serverArgs(), {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        EDGE_DRIVER: 'builtin',
        HOME: process.env.HOME ?? '/tmp',
        SLIPWAY_ROLE: 'edge',
        DATABASE_URL: h.databaseUrl,
        DATA_DIR: dataDir,
        ROUTER_HOST: '127.0.0.1',
        ROUTER_PORT: String(edgePort),
        LOG_LEVEL: 'debug',
        REQUEST_STATS_FLUSH_MS: '200',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    edge.stdout!.on('data', (d) => (edgeOutput += d));
    edge.stderr!.on('data', (d) => (edgeOutput += d));
    await waitFor(
      'the edge process to listen',
      () => {
        if (edge.exitCode !== null) throw new Error(`edge process exited ${edge.exitCode}:\n${edgeOutput}`);
        return edgeOutput.includes('[slipway] edge role (builtin)');
      },
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    if (edge && edge.exitCode === null) {
      edge.kill('SIGKILL');
      await new Promise((r) => edge.once('exit', r));
    }
    await h?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the application the worker routed, by its platform name', async () => {
    // The edge listens before its first read of the routes from the database (it serves without one): wait for that read.
    await waitFor('the edge to read its routes', async () => (await routerGet(edgePort, host)).status === 200, 30_000);
    expect(await routerGet(edgePort, host)).toEqual({ status: 200, body: 'v1' });
    expect((await routerGet(edgePort, 'nobody.localhost')).status).toBe(404);
  });

  it('follows a redeploy under continuous load with no failed request (LISTEN/NOTIFY, drained before the old instance stops)', async () => {
    const redeployed = (async () => {
      await new Promise((r) => setTimeout(r, 300));
      await deploy('v2');
      await new Promise((r) => setTimeout(r, 300));
    })();
    const report = await loadDuring(edgePort, host, redeployed);
    await redeployed;
    expect(report.failures).toEqual([]);
    expect(report.bodies).toEqual(['v1', 'v2']);
    expect(report.total).toBeGreaterThan(10);
  });

  it('writes one line per request at debug and counts requests for the observability endpoint', async () => {
    const line = edgeOutput
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'edge request' && l.host === host);
    expect(line).toMatchObject({ component: 'edge', method: 'GET', path: '/', status: 200, application: app.appId });
    expect(typeof line!.ms).toBe('number');
    await waitFor(
      'the edge process to flush its counters',
      async () => {
        const r = await h.app.inject({
          method: 'GET',
          url: `/v1/applications/${app.appId}/observability/requests?minutes=10`,
          headers: alice.headers,
        });
        return (r.json() as Array<{ requests: number }>).reduce((n, m) => n + m.requests, 0) > 10;
      },
      10_000,
    );
  });

  it('stops on SIGTERM and leaves the list of live edges', async () => {
    edge.kill('SIGTERM');
    const code = await new Promise((r) => edge.once('exit', r));
    expect(code).toBe(0);
    expect(await h.ctx.db.selectFrom('edge_nodes').selectAll().execute()).toEqual([]);
  });
});
