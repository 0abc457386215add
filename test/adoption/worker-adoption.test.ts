/**
 * Issue 37 with several workers on one database (SLIPWAY_ROLE=worker): the worker running an
 * application is killed with SIGKILL while another keeps running. The instance keeps serving;
 * when a worker starts again on this machine, the instance is adopted (same id and pid, no
 * restart) by a live worker, and the other worker's own instances were never touched.
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
import { killProcessesUnder, startPlatformProcess, stopAllStarted } from '../scale-out/platform-processes.js';

const ADMIN = { email: 'admin@example.com', password: 'adoption-admin-password' };

let database: ScratchDatabase;
let apiDir: string;
let workerDir: string;
let repo: TestRepo;
let sql: pg.Client;

beforeAll(async () => {
  database = await createScratchDatabase(inject('postgresAdminUrl'), `adoptw_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  apiDir = mkdtempSync(join(tmpdir(), 'slipway-adoptw-api-'));
  workerDir = mkdtempSync(join(tmpdir(), 'slipway-adoptw-'));
  repo = new TestRepo('slipway-adoptw-repo-');
  repo.commit({ 'server.py': pythonHttpApp(`f"name={os.environ.get('MARK', '')}"`), Procfile: 'web: python3 server.py\n' });
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});

afterAll(async () => {
  await stopAllStarted();
  if (workerDir) killProcessesUnder(workerDir);
  await sql?.end().catch(() => {});
  await database?.drop();
  for (const dir of [apiDir, workerDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  repo?.remove();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function rows(appId: string) {
  const { rows } = await sql.query<{ id: string; pid: number; port: number; restart_count: number; worker_id: string }>(
    'SELECT id, pid, port, restart_count, worker_id FROM instances WHERE application_id = $1',
    [appId],
  );
  return rows;
}

describe('instances of a killed worker', () => {
  it('keep serving and are adopted when a worker starts again; the live worker keeps its own', async () => {
    const common = {
      DATABASE_URL: database.url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      ROUTER_DRAIN_TIMEOUT_MS: '500',
      RUNTIME_STOP_GRACE_MS: '2000',
    };
    const api = startPlatformProcess('api', 'api', { ...common, DATA_DIR: apiDir });
    const workers = [1, 2].map((n) => startPlatformProcess('worker', `worker-${n}`, { ...common, DATA_DIR: workerDir }));
    const [apiUrl, ...workerIds] = await Promise.all([api.ready, ...workers.map((w) => w.ready)]);

    const login = await fetch(`${apiUrl}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const call = async (method: string, path: string, body?: unknown): Promise<any> => {
      const res = await fetch(`${apiUrl}/v1${path}`, {
        method,
        headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };
    const deployed = async (name: string) => {
      const org = await call('POST', '/organizations', { name });
      const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
      const app = await call('POST', '/applications', { name: 'Web', project_id: project.id });
      await call('PATCH', `/applications/${app.id}/settings`, {
        github_repository: repo.dir,
        health_check_path: '/',
        deployment_timeout: 60,
      });
      await call('POST', `/configurations/${app.id}`, { name: 'MARK', value: name, secret: false, buildtime: false });
      const { image_id } = await call('POST', `/images/${app.id}/build`);
      await waitFor(`build of ${name}`, async () => (await call('GET', `/images/${image_id}/detail`)).built, 60_000, 200);
      const { release_id } = await call('POST', `/releases/${app.id}/create`);
      await waitFor(`release of ${name}`, async () => (await call('GET', `/releases/${release_id}/detail`)).built, 60_000, 200);
      const { deployment_id } = await call('POST', `/releases/${release_id}/deploy`);
      const d = await waitFor(
        `deployment of ${name}`,
        async () => {
          const x = await call('GET', `/deployments/${deployment_id}/detail`);
          return x.complete || x.error ? x : null;
        },
        90_000,
        200,
      );
      expect(d.error_detail ?? null).toBeNull();
      return app.id as string;
    };
    const [one, two] = [await deployed('one'), await deployed('two')];
    const [before] = await rows(one);
    const holder = workers[workerIds.indexOf(before!.worker_id)]!;
    // The other application's instances, wherever they run, belong to a live worker unless it is the killed one.
    const [other] = await rows(two);

    holder.child.kill('SIGKILL');
    await new Promise((r) => holder.child.once('exit', r));
    expect(alive(before!.pid)).toBe(true);
    expect(await (await fetch(`http://127.0.0.1:${before!.port}/`)).text()).toBe('name=one');

    const again = startPlatformProcess('worker', 'worker-3', { ...common, DATA_DIR: workerDir });
    const againId = await again.ready;
    const live = workerIds.filter((id) => id !== before!.worker_id).concat(againId);
    const adopted = await waitFor(
      'the instance adopted by a live worker',
      async () => {
        const r = await rows(one);
        return r.length === 1 && live.includes(r[0]!.worker_id) ? r : null;
      },
      60_000,
      200,
    );
    expect(adopted).toEqual([{ ...before, worker_id: adopted[0]!.worker_id }]);
    const instances = await waitFor(
      'the adopted instance healthy',
      async () => {
        const list = await call('GET', `/applications/${one}/instances`);
        return list.length === 1 && list[0].state === 'healthy' ? list : null;
      },
      60_000,
      200,
    );
    expect(instances[0]).toMatchObject({ id: before!.id, restarts: 0 });
    expect(alive(other!.pid)).toBe(true);
    expect(await (await fetch(`http://127.0.0.1:${other!.port}/`)).text()).toBe('name=two');

    // SIGTERM stops every worker and the instances they run.
    await stopAllStarted();
    for (const r of [before!, other!]) await waitFor(`instance ${r.id} stopped`, () => !alive(r.pid), 15_000, 100);
  }, 300_000);
});
