/**
 * The edge `npm start` runs by default (issue 35 goal 3): EDGE_DRIVER unset, fixed router ports and HAProxy
 * installed → HAProxy, driven from the control plane's own process (EDGE_PROCESS defaults to in-process for a proxy
 * that is a daemon of its own). Issue 37's guarantees with that default: a kill -9 or a SIGUSR2 stop of the control
 * plane leaves HAProxy and the instances serving; the next start adopts both (every application's route kept while
 * the others are adopted); a deploy after that switches without a failed request. Real server processes on an
 * embedded PostgreSQL, two applications built and deployed through the pipeline, requests counted through the API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findHaproxy } from '../../src/find-binary.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { processesUnder } from '../scale-out/platform-processes.js';
import { freePort } from './acme-pebble.js';
import { alive } from '../helpers/process-alive.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = { email: 'admin@example.com', password: 'haproxy-default-admin-password' };
const haproxy = findHaproxy();
if (!haproxy) console.warn('skipping the default edge (HAProxy): install the Debian package haproxy');

interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

const started = new Set<ChildProcess>();

/** `npm start` as an operator runs it: EDGE_DRIVER and EDGE_PROCESS unset (the harness's runMain names the built-in edge). */
function runMain(env: Record<string, string>): Started {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** Requests to every host through the edge, two clients per host (one kept alive), until `until` resolves. */
function trafficUntil(port: number, hosts: string[], until: Promise<unknown>) {
  const report = { total: 0, failures: [] as string[], bodies: new Set<string>() };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: hosts.length });
  let done = false;
  void until.finally(() => (done = true));
  const loop = async (host: string, agent: Agent | false) => {
    while (!done) {
      report.total++;
      try {
        const r = await routerGet(port, host, '/', 30_000, agent);
        if (r.status === 200) report.bodies.add(r.body);
        else report.failures.push(`${host}: status ${r.status}: ${r.body.slice(0, 100)}`);
      } catch (err) {
        report.failures.push(`${host}: ${(err as Error).message}`);
      }
    }
  };
  const finished = Promise.all(hosts.flatMap((host) => [loop(host, keepAlive), loop(host, false)])).then(() => {
    keepAlive.destroy();
    return report;
  });
  return { report, finished };
}

describe.skipIf(!haproxy)('the default edge: HAProxy driven from the control plane, outliving it', () => {
  let dataDir: string;
  let repo: TestRepo;
  let env: Record<string, string>;
  let routerPort: number;
  let httpsPort: number;
  let server: Started;
  let apiUrl: string;
  let apiKey: string;
  const apps: Array<{ id: string; host: string }> = [];

  const haproxyDir = () => join(dataDir, 'edge', 'haproxy');
  const masterPid = () => Number(readFileSync(join(haproxyDir(), 'haproxy.pid'), 'utf8').trim());
  // HAProxy rewrites its pid file at a reload (emptied, then written): a read at that instant finds no number.
  const readMasterPid = () => waitFor("HAProxy's pid file written", async () => masterPid() || null, 10_000, 20);

  async function call(method: string, path: string, body?: unknown) {
    const res = await fetch(`${apiUrl}/v1${path}`, {
      method,
      headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as any;
  }

  /** Waits for a build, release or deployment (`kind` names its detail endpoint) to finish, and fails on its error. */
  async function finished(kind: 'images' | 'releases' | 'deployments', id: string) {
    const detail = await waitFor(
      `the ${kind} ${id}`,
      async () => {
        const d = await call('GET', `/${kind}/${id}/detail`);
        return d.built || d.complete || d.error ? d : null;
      },
      120_000,
      250,
    );
    expect(detail.error_detail ?? (detail.error ? JSON.stringify(detail) : null)).toBeNull();
    return detail;
  }

  async function releaseAndDeploy(appId: string) {
    const { release_id } = await call('POST', `/releases/${appId}/create`);
    await finished('releases', release_id);
    const { deployment_id } = await call('POST', `/releases/${release_id}/deploy`);
    return finished('deployments', deployment_id);
  }

  async function startControlPlane(): Promise<Started> {
    const s = runMain(env);
    apiUrl = await waitFor(
      'the control plane to listen',
      () => {
        if (s.child.exitCode !== null) throw new Error(`the control plane exited:\n${s.output()}`);
        return /API listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(s.output())?.[1];
      },
      90_000,
      100,
    );
    return s;
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-default-edge-'));
    repo = new TestRepo('slipway-default-edge-repo-');
    // Says which process answered and what the edge told it; writes nothing per request.
    repo.commit({
      'server.py': pythonHttpApp(
        `f"instance={INSTANCE} for={self.headers.get('x-forwarded-for')} proto={self.headers.get('x-forwarded-proto')} host={self.headers.get('x-forwarded-host')}"`,
        // Its own pid is the same in every sandbox (a PID namespace each): a random name tells instances apart.
        'INSTANCE = os.urandom(6).hex()',
      ),
      Procfile: 'web: python3 server.py\n',
    });
    [routerPort, httpsPort] = [await freePort(), await freePort()];
    env = {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(await freePort()),
      PORT: '0',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: String(routerPort),
      ROUTER_HTTPS_PORT: String(httpsPort),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      SOURCE_PATH_ALLOWLIST: tmpdir(),
      ROUTER_DRAIN_TIMEOUT_MS: '2000',
      RUNTIME_STOP_GRACE_MS: '2000',
      REQUEST_STATS_FLUSH_MS: '200',
      DEPLOY_STABILITY_WINDOW_SECONDS: '0',
    };
    server = await startControlPlane();
    apiKey = await login(apiUrl);
    const org = await call('POST', '/organizations', { name: 'Edge' });
    const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
    for (const name of ['Web', 'Api']) {
      const app = await call('POST', '/applications', { name, project_id: project.id });
      await call('PATCH', `/applications/${app.id}/settings`, {
        github_repository: repo.dir,
        health_check_path: '/',
        deployment_timeout: 60,
      });
      const { image_id } = await call('POST', `/images/${app.id}/build`);
      await finished('images', image_id);
      const deployment = await releaseAndDeploy(app.id);
      apps.push({ id: app.id, host: new URL(deployment.deploy_metadata.url).hostname });
    }
  }, 400_000);

  afterAll(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dataDir) {
      // HAProxy (a daemon of its own), the application instances and the embedded PostgreSQL this test left running.
      for (const pid of [existsSync(join(haproxyDir(), 'haproxy.pid')) ? masterPid() : 0, ...processesUnder(dataDir)])
        try {
          if (pid > 0) process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      try {
        process.kill(Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGINT');
      } catch {
        /* not running */
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
    repo?.remove();
  });

  it('chooses HAProxy, says why, runs no edge process of its own, forwards X-Forwarded-* and counts requests into the API', async () => {
    expect(server.output()).toContain(`(edge: haproxy (default: ${haproxy} found))`);
    // No Node edge process beside the control plane: HAProxy's master is the daemon that outlives it.
    expect(existsSync(join(dataDir, 'edge', 'control.sock'))).toBe(false);
    expect(existsSync(join(dataDir, 'edge', 'edge.pid'))).toBe(false);
    const master = await readMasterPid();
    expect(alive(master)).toBe(true);
    expect(readFileSync(`/proc/${master}/cmdline`, 'utf8')).toContain(join(haproxyDir(), 'haproxy.cfg'));
    // A daemon: not in the control plane's session, so a signal to that session's group or its death leaves it.
    const session = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[3]);
    expect(session(master)).not.toBe(session(server.child.pid!));

    for (const { host } of apps) {
      const r = await routerGet(routerPort, host);
      expect(r.status).toBe(200);
      expect(r.body).toMatch(new RegExp(`^instance=[0-9a-f]{12} for=127\\.0\\.0\\.1 proto=http host=${host.replaceAll('.', '\\.')}$`));
    }
    expect((await routerGet(routerPort, 'nobody.localhost')).status).toBe(404);

    const [{ id, host }] = apps as [{ id: string; host: string }];
    for (let i = 0; i < 20; i++) expect((await routerGet(routerPort, host)).status).toBe(200);
    const counted = await waitFor(
      'the requests counted through the API',
      async () => {
        const minutes = (await call('GET', `/applications/${id}/observability/requests?minutes=10`)) as Array<{
          requests: number;
          status: Record<string, number>;
        }>;
        const ok = minutes.reduce((n, m) => n + (m.status['2xx'] ?? 0), 0);
        return ok >= 21 ? ok : null;
      },
      15_000,
      200,
    );
    expect(counted).toBeGreaterThanOrEqual(21);
  });

  it('keeps serving every application through a kill -9 of the control plane; the next start adopts HAProxy and the instances; no request fails', async () => {
    const master = await readMasterPid();
    let stop!: () => void;
    const until = new Promise<void>((r) => (stop = r));
    const traffic = trafficUntil(
      routerPort,
      apps.map((a) => a.host),
      until,
    );
    let restarted: Started | null = null;
    try {
      await waitFor('some traffic before the kill', () => traffic.report.total > 50);
      server.child.kill('SIGKILL');
      await server.exited;
      const atKill = traffic.report.total;
      await waitFor('traffic with the control plane gone', () => traffic.report.total > atKill + 100, 30_000);
      expect(alive(master), 'HAProxy outlives the control plane').toBe(true);
      restarted = await startControlPlane();
      await waitFor(
        'the restarted control plane to adopt HAProxy',
        () => restarted!.output().includes('adopted the running HAProxy'),
        60_000,
      );
      await waitFor(
        'both instances adopted',
        () => restarted!.output().split('adopted running instances').length - 1 >= apps.length,
        120_000,
        200,
      );
      const atAdoption = traffic.report.total;
      await waitFor('traffic after the adoption', () => traffic.report.total > atAdoption + 100, 30_000);
    } finally {
      stop();
    }
    const report = await traffic.finished;
    console.log(`kill -9 and restart of the control plane: ${report.total} requests through HAProxy, ${report.failures.length} failed`);
    expect(report.failures.slice(0, 5)).toEqual([]);
    expect(await readMasterPid(), 'the same HAProxy master').toBe(master);
    expect(restarted!.output()).not.toContain('EADDRINUSE');
    server = restarted!;
  }, 300_000);

  it(
    'an upgrade (SIGUSR2, start again) keeps HAProxy and the instances serving; a deploy after it switches with no failed request',
    { timeout: 300_000, retry: 1 },
    async () => {
      const master = await readMasterPid();
      let stop!: () => void;
      const until = new Promise<void>((r) => (stop = r));
      const traffic = trafficUntil(
        routerPort,
        apps.map((a) => a.host),
        until,
      );
      let deployedBody = '';
      try {
        await waitFor('some traffic before the stop', () => traffic.report.total > 50);
        const seen = traffic.report.bodies.size;
        server.child.kill('SIGUSR2');
        expect(await server.exited).toBe(0);
        expect(server.output()).toContain('control plane stopped; instances keep serving');
        expect(alive(master)).toBe(true);
        server = await startControlPlane();
        await waitFor('the new control plane to adopt HAProxy', () => server.output().includes('adopted the running HAProxy'), 60_000);
        await waitFor(
          'both instances adopted',
          () => server.output().split('adopted running instances').length - 1 >= apps.length,
          120_000,
          200,
        );
        expect(traffic.report.bodies.size, 'the same instances answered throughout').toBe(seen);
        // A deploy through the adopted HAProxy: new instances take over under load.
        const [first] = apps as [{ id: string; host: string }];
        const before = new Set(traffic.report.bodies);
        await releaseAndDeploy(first.id);
        deployedBody = await waitFor('the new instance to answer', async () => {
          const r = await routerGet(routerPort, first.host);
          return r.status === 200 && !before.has(r.body) ? r.body : null;
        });
        const atSwitch = traffic.report.total;
        await waitFor('traffic after the switch', () => traffic.report.total > atSwitch + 50, 30_000);
      } finally {
        stop();
      }
      const report = await traffic.finished;
      console.log(`upgrade (SIGUSR2 stop, start) and a deploy: ${report.total} requests through HAProxy, ${report.failures.length} failed`);
      expect(report.failures.slice(0, 5)).toEqual([]);
      expect(report.bodies).toContain(deployedBody);
      expect(await readMasterPid()).toBe(master);
    },
  );
});

async function login(apiUrl: string): Promise<string> {
  const res = await fetch(`${apiUrl}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const key = await fetch(`${apiUrl}/v1/auth/api-keys`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'default-edge' }),
  });
  expect(key.status).toBe(201);
  return ((await key.json()) as { key: string }).key;
}
