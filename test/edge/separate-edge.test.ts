/**
 * Issue 37, separate planes: `npm start` (the `all` role) serves applications from an edge
 * process of its own. A `kill -9` of the control plane leaves that edge (and the application)
 * serving; the next start adopts it; an edge started alone while PostgreSQL is down serves the
 * route table it persisted. Real server processes on an embedded PostgreSQL, a real application
 * built and deployed through the pipeline, requests counted through the edge.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';
import { processesUnder } from '../scale-out/platform-processes.js';
import { freePort } from './acme-pebble.js';
import { alive } from '../helpers/process-alive.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = { email: 'admin@example.com', password: 'separate-edge-admin-password' };

interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

const started = new Set<ChildProcess>();

function runMain(env: Record<string, string>): Started {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      EDGE_DRIVER: 'builtin',
      HOME: process.env.HOME ?? '/tmp',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DEPLOY_STABILITY_WINDOW_SECONDS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** Requests through the edge, four clients, until `until` resolves: every non-200 answer or socket error is a failure. */
function trafficUntil(port: number, host: string, until: Promise<unknown>) {
  const report = { total: 0, failures: [] as string[], bodies: new Set<string>(), slowestMs: 0 };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 2 });
  let done = false;
  void until.finally(() => (done = true));
  const loop = async (i: number) => {
    while (!done) {
      report.total++;
      const began = Date.now();
      try {
        // Generous: a request the edge holds while instances are replaced answers late, but answers.
        const r = await routerGet(port, host, '/', 90_000, i % 2 === 0 ? keepAlive : false);
        report.slowestMs = Math.max(report.slowestMs, Date.now() - began);
        if (r.status === 200) report.bodies.add(r.body);
        else report.failures.push(`status ${r.status}: ${r.body.slice(0, 100)}`);
      } catch (err) {
        report.failures.push((err as Error).message);
      }
    }
  };
  const finished = Promise.all([0, 1, 2, 3].map(loop)).then(() => {
    keepAlive.destroy();
    return report;
  });
  return { report, finished };
}

describe('the edge runs as its own process and outlives the control plane', () => {
  let dataDir: string;
  let repo: TestRepo;
  let env: Record<string, string>;
  let routerPort: number;
  let host: string;
  let server: Started;
  let apiUrl: string;
  let apiKey: string;

  const edgeStatusPid = () => Number(readFileSync(join(dataDir, 'edge', 'edge.pid'), 'utf8').trim());

  async function startControlPlane(): Promise<{ started: Started; apiUrl: string }> {
    const s = runMain(env);
    const apiUrl = await waitFor(
      'the control plane to listen',
      () => {
        if (s.child.exitCode !== null) throw new Error(`the control plane exited:\n${s.output()}`);
        return /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(s.output())?.[1];
      },
      90_000,
      100,
    );
    return { started: s, apiUrl };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-separate-edge-'));
    repo = new TestRepo('slipway-separate-edge-repo-');
    // Writes nothing per request (log_message is silent): it needs no reader of its output once its parent is gone.
    repo.commit({ 'server.py': pythonHttpApp('f"pid={os.getpid()}"'), Procfile: 'web: python3 server.py\n' });
    routerPort = await freePort();
    env = {
      DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(await freePort()),
      PORT: '0',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: String(routerPort),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      SOURCE_PATH_ALLOWLIST: tmpdir(),
      ROUTER_DRAIN_TIMEOUT_MS: '2000',
      RUNTIME_STOP_GRACE_MS: '2000',
      ROUTER_RETRY_WINDOW_MS: '60000',
    };

    const first = await startControlPlane();
    server = first.started;
    apiUrl = first.apiUrl;
    apiKey = await login(apiUrl);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}/v1${path}`, {
        method,
        headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return (text ? JSON.parse(text) : undefined) as any;
    };
    const org = await call('POST', '/organizations', { name: 'Edge' });
    const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
    const app = await call('POST', '/applications', { name: 'Web', project_id: project.id });
    await call('PATCH', `/applications/${app.id}/settings`, {
      github_repository: repo.dir,
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const { image_id } = await call('POST', `/images/${app.id}/build`);
    const image = await waitFor(
      'the build',
      async () => {
        const d = await call('GET', `/images/${image_id}/detail`);
        return d.built || d.error ? d : null;
      },
      120_000,
      250,
    );
    expect(image.error_detail ?? null).toBeNull();
    const { release_id } = await call('POST', `/releases/${app.id}/create`);
    const release = await waitFor(
      'the release',
      async () => {
        const d = await call('GET', `/releases/${release_id}/detail`);
        return d.built || d.error ? d : null;
      },
      120_000,
      250,
    );
    expect(release.error_detail ?? null).toBeNull();
    const { deployment_id } = await call('POST', `/releases/${release_id}/deploy`);
    const deployment = await waitFor(
      'the deployment',
      async () => {
        const d = await call('GET', `/deployments/${deployment_id}/detail`);
        return d.complete || d.error ? d : null;
      },
      120_000,
      250,
    );
    expect(deployment.error, JSON.stringify(deployment)).toBe(false);
    host = new URL(deployment.deploy_metadata.url).hostname;
    expect((await routerGet(routerPort, host)).status).toBe(200);
  }, 300_000);

  afterAll(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dataDir) {
      // The edge and the application processes this test left running (and the orphaned database).
      for (const pid of [...processesUnder(dataDir), ...pidsWithDataDir(dataDir)])
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      stopEmbeddedPostgres(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    }
    repo?.remove();
  });

  it('keeps serving through a kill -9 of the control plane; the next start adopts the running edge; no request fails', async () => {
    const edgePid = edgeStatusPid();
    expect(alive(edgePid)).toBe(true);
    expect(edgePid).not.toBe(server.child.pid);
    const before = await routerGet(routerPort, host);
    expect(before.status).toBe(200);

    let restarted: Started | null = null;
    let finish!: () => void;
    const until = new Promise<void>((r) => (finish = r));
    const traffic = trafficUntil(routerPort, host, until);
    try {
      await waitFor('some traffic before the kill', () => traffic.report.total > 50);
      server.child.kill('SIGKILL');
      await server.exited;
      const atKill = traffic.report.total;
      await waitFor('traffic with the control plane gone', () => traffic.report.total > atKill + 100, 30_000);
      expect(alive(edgePid), 'the edge outlives the control plane').toBe(true);

      const second = await startControlPlane();
      restarted = second.started;
      apiUrl = second.apiUrl;
      expect(restarted.output()).toContain(`adopted the running edge process (pid ${edgePid}`);
      // The restarted control plane adopts the instance that kept running (src/platform/runtime/local/instance-shim.ts).
      await waitFor(
        'the restarted control plane to adopt the running instance',
        () => restarted!.output().includes('adopted running instances'),
        120_000,
        200,
      );
      const atSwitch = traffic.report.total;
      await waitFor('traffic after the switch', () => traffic.report.total > atSwitch + 50, 30_000);
    } finally {
      finish();
    }
    const report = await traffic.finished;
    expect(report.failures).toEqual([]);
    expect(report.total).toBeGreaterThan(200);
    console.log(
      `kill -9 and restart of the control plane: ${report.total} requests through the edge, ${report.failures.length} failed, slowest ${report.slowestMs} ms`,
    );
    expect(edgeStatusPid(), 'still the first edge: none was started beside it').toBe(edgePid);
    expect(restarted!.output()).not.toContain('EADDRINUSE');
    server = restarted!;
  }, 300_000);

  it('an upgrade (stop with SIGUSR2, start again) keeps the edge serving; no request fails', async () => {
    const edgePid = edgeStatusPid();
    let finish!: () => void;
    const until = new Promise<void>((r) => (finish = r));
    const traffic = trafficUntil(routerPort, host, until);
    let next: Started | null = null;
    try {
      await waitFor('some traffic before the stop', () => traffic.report.total > 50);
      const seen = traffic.report.bodies.size;
      server.child.kill('SIGUSR2');
      expect(await server.exited).toBe(0);
      expect(server.output()).toContain(`the edge process (pid ${edgePid}) keeps serving`);
      expect(alive(edgePid)).toBe(true);
      const upgraded = await startControlPlane();
      next = upgraded.started;
      apiUrl = upgraded.apiUrl;
      expect(next.output()).toContain(`adopted the running edge process (pid ${edgePid}`);
      // SIGUSR2 left the instance running too: the new control plane adopts it rather than starting another.
      await waitFor(
        'the new control plane to adopt the running instance',
        () => next!.output().includes('adopted running instances'),
        120_000,
        200,
      );
      expect(traffic.report.bodies.size, 'the same instance answered throughout').toBe(seen);
      const atSwitch = traffic.report.total;
      await waitFor('traffic after the switch', () => traffic.report.total > atSwitch + 50, 30_000);
    } finally {
      finish();
    }
    const report = await traffic.finished;
    console.log(
      `upgrade (SIGUSR2 stop, start): ${report.total} requests through the edge, ${report.failures.length} failed, slowest ${report.slowestMs} ms`,
    );
    expect(report.failures).toEqual([]);
    expect(edgeStatusPid()).toBe(edgePid);
    server = next!;
  }, 300_000);

  it('an edge killed while the control plane runs is started again and serves the application (no 404)', async () => {
    const edgePid = edgeStatusPid();
    process.kill(edgePid, 'SIGKILL');
    const replacement = await waitFor(
      'the control plane to start another edge',
      () => {
        try {
          const pid = edgeStatusPid();
          return pid !== edgePid && alive(pid) ? pid : null;
        } catch {
          return null;
        }
      },
      30_000,
    );
    await waitFor('the control plane to report the new edge', () =>
      server.output().includes(`started the edge process (pid ${replacement}`),
    );
    const answer = await waitFor('the new edge to answer', () => routerGet(routerPort, host).catch(() => null), 30_000);
    expect(answer.status, answer.body).toBe(200);
  }, 60_000);

  it('maintenance mode reaches the edge process, is kept in its snapshot and survives a restart of that edge', async () => {
    const [, project, org] = host.split('.');
    const toggle = async (body: object) => {
      const res = await fetch(`${apiUrl}/v1/workspaces/${org}/projects/${project}/envs/production/maintenance`, {
        method: 'PUT',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.text()).toBe(200);
    };
    await toggle({ enabled: true, message: 'Moving racks', retry_after: 45 });
    const page = await waitFor('the edge process to serve the page', async () => {
      const r = await routerGet(routerPort, host);
      return r.status === 503 ? r : null;
    });
    expect(page.body).toContain('Moving racks');
    await waitFor('the snapshot to keep it', () => readFileSync(join(dataDir, 'edge', 'routes.json'), 'utf8').includes('Moving racks'));
    const edgePid = edgeStatusPid();
    process.kill(edgePid, 'SIGKILL');
    const again = await waitFor(
      'a new edge to answer',
      async () => {
        const pid = (() => {
          try {
            return edgeStatusPid();
          } catch {
            return edgePid;
          }
        })();
        return pid !== edgePid ? routerGet(routerPort, host).catch(() => null) : null;
      },
      30_000,
    );
    expect(again.status).toBe(503);
    expect(again.body).toContain('Moving racks');
    await toggle({ enabled: false });
    await waitFor('the edge process to serve the application again', async () => (await routerGet(routerPort, host)).status === 200);
  }, 60_000);

  it('a kill -9 of the embedded PostgreSQL loses no application request; the API answers 503 with Retry-After meanwhile and recovers by itself', async () => {
    const postmasterPid = () => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killed = postmasterPid();
    let finish!: () => void;
    const until = new Promise<void>((r) => (finish = r));
    const traffic = trafficUntil(routerPort, host, until);
    const apiStatuses: number[] = [];
    try {
      await waitFor('some traffic before the kill', () => traffic.report.total > 50);
      process.kill(killed, 'SIGKILL');
      await waitFor(
        'the API to answer from a restarted database',
        async () => {
          const res = await fetch(`${apiUrl}/v1/organizations`, { headers: { 'x-api-key': apiKey } });
          await res.text();
          apiStatuses.push(res.status);
          // Never a 500 while the database is away: 503 with Retry-After, or an answer.
          if (res.status !== 200) {
            expect(res.status).toBe(503);
            expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
          }
          return res.status === 200 && existsSync(join(dataDir, 'postgres', 'postmaster.pid')) && postmasterPid() !== killed;
        },
        90_000,
        100,
      );
      const atRecovery = traffic.report.total;
      await waitFor('traffic after the recovery', () => traffic.report.total > atRecovery + 50, 30_000);
    } finally {
      finish();
    }
    const report = await traffic.finished;
    console.log(
      `kill -9 of PostgreSQL: ${report.total} requests through the edge, ${report.failures.length} failed; API answers ${apiStatuses.filter((s) => s === 503).length}x 503, then 200`,
    );
    expect(report.failures).toEqual([]);
    expect(server.child.exitCode, 'a lost database does not stop the control plane').toBeNull();
  }, 180_000);

  it('an edge started alone while PostgreSQL is down serves the persisted routes at once', async () => {
    const snapshot = join(dataDir, 'edge', 'routes.json');
    expect(statSync(snapshot).mode & 0o777).toBe(0o600);
    expect(readFileSync(snapshot, 'utf8')).toContain(host);

    // Everything stops: the control plane (kill -9: its application instance lives on), the edge, the database.
    const edgePid = edgeStatusPid();
    server.child.kill('SIGKILL');
    await server.exited;
    process.kill(edgePid, 'SIGKILL');
    await waitFor('the edge to be gone', () => !alive(edgePid));
    stopEmbeddedPostgres(dataDir);
    await waitFor('the embedded PostgreSQL to be gone', () => !existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 30_000);

    const edge = runMain({ ...env, SLIPWAY_ROLE: 'edge' });
    await waitFor(
      'the edge to listen',
      () => {
        if (edge.child.exitCode !== null) throw new Error(`the edge exited:\n${edge.output()}`);
        return edge.output().includes('[slipway] edge role (builtin)');
      },
      60_000,
    );
    // The very first request already finds the application.
    const first = await routerGet(routerPort, host);
    expect(first.status, first.body).toBe(200);
    let finish!: () => void;
    const until = new Promise<void>((r) => (finish = r));
    const traffic = trafficUntil(routerPort, host, until);
    try {
      await waitFor('the edge to report its database unreachable', () => edge.output().includes('cannot reach its database'), 30_000);
      await waitFor('traffic while the database is down', () => traffic.report.total > 200, 30_000);
    } finally {
      finish();
    }
    const report = await traffic.finished;
    console.log(`edge alone, database down: ${report.total + 1} requests, ${report.failures.length} failed`);
    expect(report.failures).toEqual([]);
    expect(edge.child.exitCode, 'a database that does not answer does not stop the edge').toBeNull();
    expect((await routerGet(routerPort, 'nobody.localhost')).status).toBe(404);

    edge.child.kill('SIGTERM');
    expect(await edge.exited).toBe(0);
  }, 180_000);
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
    body: JSON.stringify({ name: 'separate-edge' }),
  });
  expect(key.status).toBe(201);
  return ((await key.json()) as { key: string }).key;
}

/** Node processes started with this data directory in their environment (the edge this test's servers spawned). */
function pidsWithDataDir(dataDir: string): number[] {
  const pids: number[] = [];
  for (const pid of processesUnder('/')) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (environ.includes(`DATA_DIR=${dataDir}`) && pid !== process.pid) pids.push(pid);
    } catch {
      /* gone */
    }
  }
  return pids;
}

/** Stops the embedded PostgreSQL of `dataDir` if it runs (fast shutdown: SIGINT to the postmaster). */
function stopEmbeddedPostgres(dataDir: string) {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGINT');
  } catch {
    /* not running */
  }
}
