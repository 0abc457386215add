/**
 * Issue 37: application instances outlive the control plane. A real `src/main.ts` (role `all`:
 * API, workers, runtime) on a fresh database deploys an app that serves HTTP and writes a
 * numbered line every 100 ms. The control plane is killed with SIGKILL: the instance keeps
 * answering on its host port; a new control plane re-adopts the same instance (same id and
 * pid, no restart counted), the lines written while it was away reach the application's log
 * once, an adopted instance that crashes is restarted on its port, and scaling and redeploying
 * work afterwards. SIGUSR2 stops the control plane only (the upgrade path); a deployment
 * interrupted by SIGKILL fails and leaves one generation running; SIGTERM stops the instances.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { waitFor } from '../helpers/wait.js';
import {
  killProcessesUnder,
  processesUnder,
  startPlatformProcess,
  stopAllStarted,
  type PlatformProcess,
} from '../scale-out/platform-processes.js';

const ADMIN = { email: 'admin@example.com', password: 'adoption-admin-password' };

/** Counts in a thread and prints `tick <n>` every 100 ms; GET answers the count so far. MARK=slow listens only after 2 minutes. */
const TICKING_APP = pythonHttpApp(
  `f"ticks={ticks[0]} mark={os.environ.get('MARK', '')}"`,
  `
import threading, time
if os.environ.get('MARK') == 'slow': time.sleep(120)
ticks = [0]
def tick():
    while True:
        ticks[0] += 1
        print(f"tick {ticks[0]}", flush=True)
        time.sleep(0.1)
threading.Thread(target=tick, daemon=True).start()
`,
);

let database: ScratchDatabase;
let dataDir: string;
let repo: TestRepo;
let sql: pg.Client;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createScratchDatabase(inject('postgresAdminUrl'), `adopt_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  dataDir = mkdtempSync(join(tmpdir(), 'slipway-adopt-'));
  repo = new TestRepo('slipway-adopt-repo-');
  repo.commit({ 'server.py': TICKING_APP, Procfile: 'web: python3 server.py\n' });
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  env = {
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    SECRET_KEY: randomBytes(32).toString('base64'),
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    ROUTER_DRAIN_TIMEOUT_MS: '500',
    RUNTIME_STOP_GRACE_MS: '2000',
  };
});

afterAll(async () => {
  await stopAllStarted();
  // Instances (and shims) a failed test left behind: ours to end.
  if (dataDir) killProcessesUnder(dataDir);
  await sql?.end().catch(() => {});
  await database?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  repo?.remove();
});

type Call = <T = any>(method: string, path: string, body?: unknown) => Promise<T>;

async function client(apiUrl: string): Promise<Call> {
  const login = await fetch(`${apiUrl}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  expect(login.status).toBe(200);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  return async (method, path, body) => {
    const res = await fetch(`${apiUrl}/v1${path}`, {
      method,
      headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as never;
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** GET on the instance's own host port (the edge is not involved). */
async function direct(port: number): Promise<{ ticks: number; mark: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/`);
  expect(res.status).toBe(200);
  const m = /ticks=(\d+) mark=(\S*)/.exec(await res.text())!;
  return { ticks: Number(m[1]), mark: m[2]! };
}

async function instanceRows(appId: string) {
  const { rows } = await sql.query<{ id: string; pid: number; port: number; release_id: string; restart_count: number }>(
    'SELECT id, pid, port, release_id, restart_count FROM instances WHERE application_id = $1 ORDER BY ordinal',
    [appId],
  );
  return rows;
}

async function deploy(call: Call, appId: string, mark: string): Promise<string> {
  await call('POST', `/configurations/${appId}`, { name: 'MARK', value: mark, secret: false, buildtime: false }).catch(async () => {
    const vars = await call<any[]>('GET', `/configurations/${appId}`);
    const existing = vars.find((v) => v.name === 'MARK');
    await call('PATCH', `/configurations/${appId}/${existing.id}`, { value: mark });
  });
  const { release_id } = await call('POST', `/releases/${appId}/create`);
  await waitFor(
    'the release',
    async () => {
      const d = await call('GET', `/releases/${release_id}/detail`);
      if (d.error) throw new Error(`release failed: ${d.error_detail}`);
      return d.built ? d : null;
    },
    60_000,
    200,
  );
  const { deployment_id } = await call('POST', `/releases/${release_id}/deploy`);
  const done = await waitFor(
    'the deployment',
    async () => {
      const d = await call('GET', `/deployments/${deployment_id}/detail`);
      return d.complete || d.error ? d : null;
    },
    90_000,
    200,
  );
  expect(done.error_detail ?? null).toBeNull();
  return release_id as string;
}

/** The app's logged tick numbers (the newest 1000 lines). */
async function loggedTicks(call: Call, appId: string): Promise<number[]> {
  const page = await call('GET', `/applications/${appId}/logs?search=tick&limit=1000`);
  return page.items
    .map((l: any) => /^tick (\d+)$/.exec(l.line)?.[1])
    .filter(Boolean)
    .map(Number);
}

describe('instances outlive the control plane', () => {
  it('keep serving through kill -9 of the platform, are re-adopted with their output, and still scale, redeploy and stop', async () => {
    let platform: PlatformProcess = startPlatformProcess('all', 'platform-1', env);
    let call = await client(await platform.ready);
    const org = await call('POST', '/organizations', { name: 'Adopt' });
    const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
    const app = await call('POST', '/applications', { name: 'Web', project_id: project.id });
    await call('PATCH', `/applications/${app.id}/settings`, {
      github_repository: repo.dir,
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const { image_id } = await call('POST', `/images/${app.id}/build`);
    await waitFor(
      'the build',
      async () => {
        const d = await call('GET', `/images/${image_id}/detail`);
        if (d.error) throw new Error(`build failed: ${d.error_detail}`);
        return d.built ? d : null;
      },
      60_000,
      200,
    );
    const v1 = await deploy(call, app.id, 'one');
    const [before] = await instanceRows(app.id);
    expect(before).toMatchObject({ release_id: v1, restart_count: 0 });
    expect((await direct(before!.port)).mark).toBe('one');

    // --- the control plane dies without a chance to clean up ---
    const atKill = (await direct(before!.port)).ticks;
    platform.child.kill('SIGKILL');
    await new Promise((r) => platform.child.once('exit', r));
    expect(alive(before!.pid)).toBe(true);
    // It keeps serving (and writing) while no control plane runs.
    const whileAway = await waitFor(
      'the instance to go on without a control plane',
      async () => {
        const now = await direct(before!.port);
        return now.ticks > atKill + 15 ? now : null;
      },
      10_000,
      100,
    );

    // --- a new control plane adopts it ---
    platform = startPlatformProcess('all', 'platform-2', env);
    call = await client(await platform.ready);
    const instances = await waitFor(
      'the instance adopted and healthy',
      async () => {
        const list = await call<any[]>('GET', `/applications/${app.id}/instances`);
        return list.length === 1 && list[0].state === 'healthy' ? list : null;
      },
      60_000,
      200,
    );
    expect(instances[0]).toMatchObject({ id: before!.id, restarts: 0 });
    expect(await instanceRows(app.id)).toEqual([before]);
    expect(platform.logLines().some((l) => l.msg === 'adopted running instances')).toBe(true);

    // Its output flows again: lines written while nobody read arrive once, then new ones.
    const afterRestart = (await direct(before!.port)).ticks;
    const ticks = await waitFor(
      'new lines in the application log',
      async () => {
        const t = await loggedTicks(call, app.id);
        return t.some((n) => n > afterRestart + 5) ? t : null;
      },
      30_000,
      250,
    );
    expect(new Set(ticks).size).toBe(ticks.length);
    // Lines the killed process had read but not stored may be lost; none written after it died.
    for (let n = atKill + 5; n <= whileAway.ticks; n++) expect(ticks, `tick ${n}`).toContain(n);

    // An adopted instance that crashes is restarted like any other, on its port (the dead platform's network helper is ended first).
    process.kill(-before!.pid, 'SIGKILL');
    const restarted = await waitFor(
      'the crashed instance restarted and healthy',
      async () => {
        const list = await call<any[]>('GET', `/applications/${app.id}/instances`);
        return list.length === 1 && list[0].restarts === 1 && list[0].state === 'healthy' ? list : null;
      },
      60_000,
      200,
    );
    expect(restarted[0].id).toBe(before!.id);
    const [current] = await instanceRows(app.id);
    expect(current).toMatchObject({ id: before!.id, port: before!.port, restart_count: 1 });
    expect(current!.pid).not.toBe(before!.pid);
    expect((await direct(current!.port)).mark).toBe('one');

    // Scaling and redeploying work on the adopted instance.
    await call('POST', `/applications/${app.id}/scale`, { process_counts: { web: 2 } });
    const scaled = await waitFor(
      'two instances',
      async () => {
        const rows = await instanceRows(app.id);
        return rows.length === 2 ? rows : null;
      },
      60_000,
      200,
    );
    expect(scaled[0]).toEqual(current);
    const v2 = await deploy(call, app.id, 'two');
    const redeployed = await waitFor(
      'the previous release retired',
      async () => {
        const rows = await instanceRows(app.id);
        return rows.length === 2 && rows.every((r) => r.release_id === v2) ? rows : null;
      },
      30_000,
      200,
    );
    for (const r of redeployed) expect((await direct(r.port)).mark).toBe('two');
    await waitFor('the adopted instance to end with its release', () => !alive(current!.pid), 15_000, 100);

    // --- an upgrade: SIGUSR2 stops the control plane only ---
    platform.child.kill('SIGUSR2');
    expect(await new Promise((r) => platform.child.once('exit', r))).toBe(0);
    for (const r of redeployed) {
      expect(alive(r.pid)).toBe(true);
      expect((await direct(r.port)).mark).toBe('two');
    }
    platform = startPlatformProcess('all', 'platform-3', env);
    call = await client(await platform.ready);
    await waitFor(
      'both instances adopted',
      async () => {
        const list = await call<any[]>('GET', `/applications/${app.id}/instances`);
        return list.length === 2 && list.every((i) => i.state === 'healthy') ? list : null;
      },
      60_000,
      200,
    );
    expect(await instanceRows(app.id)).toEqual(redeployed);

    // --- a deployment interrupted by a crash: it fails, the serving release stays, one generation runs ---
    await call(
      'PATCH',
      `/configurations/${app.id}/${(await call<any[]>('GET', `/configurations/${app.id}`)).find((v) => v.name === 'MARK').id}`,
      {
        value: 'slow',
      },
    );
    const { release_id: slow } = await call('POST', `/releases/${app.id}/create`);
    await waitFor('the slow release', async () => (await call('GET', `/releases/${slow}/detail`)).built, 60_000, 200);
    const { deployment_id: interrupted } = await call('POST', `/releases/${slow}/deploy`);
    const slowRows = await waitFor(
      'the new instances started',
      async () => {
        const rows = (await instanceRows(app.id)).filter((r) => r.release_id === slow && r.pid);
        return rows.length === 2 ? rows : null;
      },
      60_000,
      100,
    );
    platform.child.kill('SIGKILL');
    await new Promise((r) => platform.child.once('exit', r));
    platform = startPlatformProcess('all', 'platform-4', env);
    call = await client(await platform.ready);
    const failed = await waitFor(
      'the interrupted deployment settled',
      async () => {
        const d = await call('GET', `/deployments/${interrupted}/detail`);
        return d.error || d.complete ? d : null;
      },
      60_000,
      200,
    );
    expect(failed).toMatchObject({ error: true, complete: false });
    for (const r of slowRows) await waitFor(`the interrupted release's instance ${r.id} ended`, () => !alive(r.pid), 15_000, 100);
    await waitFor(
      'the serving release adopted',
      async () => {
        const list = await call<any[]>('GET', `/applications/${app.id}/instances`);
        return list.length === 2 && list.every((i) => i.state === 'healthy') ? list : null;
      },
      60_000,
      200,
    );
    expect(await instanceRows(app.id)).toEqual(redeployed);
    for (const r of redeployed) expect((await direct(r.port)).mark).toBe('two');

    // --- a normal stop stops the instances ---
    expect(await platform.stop()).toBe(0);
    for (const r of redeployed) await waitFor(`instance ${r.id} stopped`, () => !alive(r.pid), 10_000, 100);
    expect(processesUnder(dataDir)).toEqual([]);
  }, 300_000);
});
