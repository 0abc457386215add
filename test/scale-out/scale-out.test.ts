/**
 * Issue 6's proof: the platform scaled out. One fresh, empty database; ONE `SLIPWAY_ROLE=api`
 * process and TWO `SLIPWAY_ROLE=worker` processes of the real `src/main.ts`, started at the
 * same moment (so they migrate the empty database concurrently). Through the API process's
 * HTTP only: 5 applications built from a local git repository, 4 releases each, then 20
 * deployments queued at once. Every deployment completes, runs exactly once, one at a time
 * per application in creation order, and both workers take jobs.
 *
 * Workers share one DATA_DIR (a build's artifact is read by whichever worker deploys it);
 * every process gets the same SECRET_KEY (secrets sealed by the API open in the workers).
 * The API process has its own DATA_DIR: it needs nothing on disk.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { routerGet } from '../helpers/router-get.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { waitFor } from '../helpers/wait.js';
import { killProcessesUnder, processesUnder, startPlatformProcess, stopAllStarted, type PlatformProcess } from './platform-processes.js';

const APPS = 5;
const DEPLOYS_PER_APP = 4;
const ADMIN = { email: 'admin@example.com', password: 'scale-out-admin-password' };

let database: ScratchDatabase;
let apiDir: string;
let workerDir: string;
let repo: TestRepo;
let api: PlatformProcess;
let workers: PlatformProcess[] = [];
let sql: pg.Client;

beforeAll(async () => {
  // Empty (not cloned from the migrated template): the three processes create every table.
  database = await createScratchDatabase(inject('postgresAdminUrl'), `scale_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  apiDir = mkdtempSync(join(tmpdir(), 'slipway-scale-api-'));
  workerDir = mkdtempSync(join(tmpdir(), 'slipway-scale-workers-'));
  repo = new TestRepo('slipway-scale-repo-');
  repo.commit({
    // Listening only after 1.2 s makes each deploy outlast a worker's 1 s poll, so the first
    // deploys of the five applications land on every idle worker loop, not all on the first one.
    'server.py': pythonHttpApp(`f"mark={os.environ['MARK']}"`, 'import time; time.sleep(1.2)'),
    Procfile: 'web: python3 server.py\n',
  });
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});

afterAll(async () => {
  await stopAllStarted();
  // Application processes our workers started and could not stop (e.g. a worker killed): ours to end.
  if (workerDir) killProcessesUnder(workerDir);
  await sql?.end().catch(() => {});
  await database?.drop();
  for (const dir of [apiDir, workerDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  repo?.remove();
});

describe('the platform scaled out: one API process, two worker processes, one database', () => {
  it('runs 20 deployments across 5 applications exactly once each, in order per application, shared by both workers', async () => {
    const began = Date.now();
    const common = {
      DATABASE_URL: database.url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      // Every replica gets the same first-administrator settings (as pods of one Deployment would).
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      PIPELINE_CONCURRENCY: '2',
      ROUTER_DRAIN_TIMEOUT_MS: '1000',
      RUNTIME_STOP_GRACE_MS: '2000',
    };
    // All three at the same moment on the empty database.
    api = startPlatformProcess('api', 'api', { ...common, DATA_DIR: apiDir });
    workers = [1, 2].map((n) => startPlatformProcess('worker', `worker-${n}`, { ...common, DATA_DIR: workerDir }));
    const [apiUrl, ...workerIds] = await Promise.all([api.ready, ...workers.map((w) => w.ready)]);
    const started = Date.now();
    expect(new Set(workerIds).size).toBe(2);

    // Concurrent starts migrated once (one process applied every migration under the lock, the
    // others found nothing to do) and created the administrator once.
    const appliers = [api, ...workers].filter((p) => /\[database\] applied migrations: /.test(p.output()));
    expect(appliers.map((p) => p.name)).toHaveLength(1);
    const migrations = await sql.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name');
    expect(migrations.rows.length).toBeGreaterThan(0);
    expect(new Set(migrations.rows.map((r) => r.name)).size).toBe(migrations.rows.length);
    expect((await sql.query('SELECT id FROM users')).rowCount).toBe(1);
    const workerRows = await sql.query<{ id: string }>('SELECT id FROM workers WHERE stopped_at IS NULL');
    expect(workerRows.rows.map((r) => r.id).sort()).toEqual([...workerIds].sort());

    // --- everything below goes through the API process only ---
    const apiKey = await login(apiUrl!);
    const call = async <T = any>(method: string, path: string, body?: unknown, expected = [200, 201, 202]): Promise<T> => {
      const res = await fetch(`${apiUrl}/v1${path}`, {
        method,
        headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!expected.includes(res.status)) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return (text ? JSON.parse(text) : undefined) as T;
    };

    // Five applications, each built once and released four times (MARK=1..4 frozen into each release).
    const apps = await Promise.all(
      Array.from({ length: APPS }, async (_, i) => {
        const org = await call('POST', '/organizations', { name: `Scale ${i}` });
        const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
        const app = await call('POST', '/applications', { name: 'Web', project_id: project.id });
        await call('PATCH', `/applications/${app.id}/settings`, {
          github_repository: repo.dir,
          health_check_path: '/',
          deployment_timeout: 60,
        });
        const { image_id } = await call('POST', `/images/${app.id}/build`);
        const image = await waitFor(
          `build of app ${i}`,
          async () => {
            const d = await call('GET', `/images/${image_id}/detail`);
            return d.built || d.error ? d : null;
          },
          60_000,
          200,
        );
        expect(image.error_detail ?? null, `build of app ${i}`).toBeNull();
        const mark = await call('POST', `/configurations/${app.id}`, { name: 'MARK', value: '1', secret: false, buildtime: false });
        const releases: Array<{ id: string; mark: number }> = [];
        for (let n = 1; n <= DEPLOYS_PER_APP; n++) {
          if (n > 1) await call('PATCH', `/configurations/${app.id}/${mark.id}`, { value: String(n) });
          const { release_id } = await call('POST', `/releases/${app.id}/create`);
          const release = await waitFor(
            `release ${n} of app ${i}`,
            async () => {
              const d = await call('GET', `/releases/${release_id}/detail`);
              return d.built || d.error ? d : null;
            },
            60_000,
            200,
          );
          expect(release.error_detail ?? null, `release ${n} of app ${i}`).toBeNull();
          releases.push({ id: release_id, mark: n });
        }
        return { id: app.id as string, index: i, releases };
      }),
    );
    const prepared = Date.now();

    // 20 deployments queued in a burst: the five applications side by side, each application's
    // four one request after the other (so "creation order" is defined), its releases shuffled.
    const queued = (
      await Promise.all(
        apps.map(async (app) => {
          const out: Array<{ appId: string; deploymentId: string; mark: number }> = [];
          for (const release of shuffle(app.releases)) {
            const { deployment_id } = await call('POST', `/releases/${release.id}/deploy`);
            out.push({ appId: app.id, deploymentId: deployment_id as string, mark: release.mark });
          }
          return out;
        }),
      )
    ).flat();
    expect(queued).toHaveLength(APPS * DEPLOYS_PER_APP);

    // Wait for every deployment to settle, then read them back (oldest first: ids are time-ordered).
    const byApp = new Map<string, any[]>();
    for (const app of apps) {
      const list = await waitFor(
        `the deployments of app ${app.index}`,
        async () => {
          const page = await call('GET', `/applications/${app.id}/deployments?per_page=50`);
          const settled = page.items.every((d: any) => d.complete || d.error);
          return page.items.length === DEPLOYS_PER_APP && settled ? page.items : null;
        },
        90_000,
        250,
      );
      const details = await Promise.all(list.map((d: any) => call('GET', `/deployments/${d.id}/detail`)));
      byApp.set(
        app.id,
        details.sort((a, b) => (a.id < b.id ? -1 : 1)),
      );
    }
    const deployed = Date.now();
    const all = [...byApp.values()].flat();

    // Every deployment completed.
    for (const d of all)
      expect({ id: d.id, complete: d.complete, error: d.error, detail: d.error_detail }).toEqual({
        id: d.id,
        complete: true,
        error: false,
        detail: null,
      });

    // Each ran exactly once: one Setup step in its log, one pg-boss job (not retried), one start logged by one worker.
    for (const d of all) expect(d.deploy_log.match(/ Setup: deploying release/g), `log of ${d.id}`).toHaveLength(1);
    const jobs = await sql.query<{
      id: string;
      record_id: string;
      state: string;
      retry_count: number;
      started_on: Date;
      completed_on: Date;
    }>(
      `SELECT id::text, data->>'recordId' AS record_id, state, retry_count, started_on, completed_on FROM pipeline_jobs
       WHERE kind = 'deploy'`,
    );
    expect(jobs.rows).toHaveLength(all.length);
    const jobOf = new Map(jobs.rows.map((j) => [j.record_id, j]));
    for (const d of all) {
      const job = jobOf.get(d.id);
      expect(job, `job of deployment ${d.id}`).toBeDefined();
      expect({ id: job!.id, state: job!.state, retries: job!.retry_count }).toEqual({ id: d.job_id, state: 'completed', retries: 0 });
    }
    const startsByJob = new Map<string, string[]>();
    for (const w of workers) {
      for (const line of w.logLines()) {
        if (line.msg === 'pipeline job started' && typeof line.jobId === 'string')
          startsByJob.set(line.jobId, [...(startsByJob.get(line.jobId) ?? []), w.name]);
      }
    }
    for (const d of all) expect(startsByJob.get(d.job_id), `workers that started deployment ${d.id}`).toHaveLength(1);
    expect(api.logLines().filter((l) => l.msg === 'pipeline job started')).toEqual([]); // the API process runs no jobs

    // Per-application order: deployment n+1 started after deployment n finished, in creation order,
    // and the last one created is the release serving now.
    for (const app of apps) {
      const list = byApp.get(app.id)!;
      for (let n = 1; n < list.length; n++) {
        expect(Date.parse(list[n].started), `app ${app.index}: deployment ${n + 1} starts after ${n} finished`).toBeGreaterThanOrEqual(
          Date.parse(list[n - 1].finished),
        );
        expect(jobOf.get(list[n].id)!.started_on.getTime()).toBeGreaterThanOrEqual(jobOf.get(list[n - 1].id)!.completed_on.getTime());
      }
      const last = list[list.length - 1];
      const expectedMark = queued.find((q) => q.deploymentId === last.id)!.mark;
      const url = new URL(last.deploy_metadata.url);
      expect(await routerGet(Number(url.port), url.hostname)).toEqual({ status: 200, body: `mark=${expectedMark}` });
    }

    // Jobs were shared: both workers ran deployments (and every deployment names one of them).
    const deploysPerWorker = new Map<string, number>();
    for (const d of all) {
      const [worker] = startsByJob.get(d.job_id)!;
      deploysPerWorker.set(worker!, (deploysPerWorker.get(worker!) ?? 0) + 1);
    }
    const allJobsPerWorker = workers.map((w) => w.logLines().filter((l) => l.msg === 'pipeline job started').length);
    console.log(
      `scale-out: start ${started - began} ms, 5 builds + 20 releases ${prepared - started} ms, 20 deployments ${deployed - prepared} ms; ` +
        `deployments per worker ${JSON.stringify(Object.fromEntries(deploysPerWorker))}, all pipeline jobs per worker ${JSON.stringify(allJobsPerWorker)}`,
    );
    expect(allJobsPerWorker.every((n) => n > 0)).toBe(true);
    // An application's deployments go to the worker holding its instances; which worker first
    // deploys each application is timing (with one job of the organization at a time, often the
    // same worker): every deployment ran on one of the two.
    for (const worker of deploysPerWorker.keys()) expect(['worker-1', 'worker-2']).toContain(worker);

    // Every process stops cleanly on SIGTERM (the workers stop their applications' processes).
    const codes = await Promise.all([api, ...workers].map((p) => p.stop()));
    expect(codes).toEqual([0, 0, 0]);
    const live = await sql.query('SELECT id FROM workers WHERE stopped_at IS NULL');
    expect(live.rowCount).toBe(0);
    expect(processesUnder(workerDir), 'application processes left running').toEqual([]);
  }, 240_000);
});

/** Logs in as the first administrator and makes an API key. */
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
    body: JSON.stringify({ name: 'scale-out' }),
  });
  expect(key.status).toBe(201);
  return ((await key.json()) as { key: string }).key;
}

function shuffle<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
