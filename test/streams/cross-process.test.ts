/**
 * The log stream across processes: a real `SLIPWAY_ROLE=api` process serves the stream
 * while a real `SLIPWAY_ROLE=worker` process runs the deployment and writes its log. The
 * API learns of each new line only through PostgreSQL LISTEN/NOTIFY. A client following
 * from before the deployment starts sees every line once, in order, and the end; a client
 * that drops and reconnects with Last-Event-ID misses and repeats nothing.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { openSse } from '../helpers/sse-client.js';
import { waitFor } from '../helpers/wait.js';
import { killProcessesUnder, startPlatformProcess, stopAllStarted, type PlatformProcess } from '../scale-out/platform-processes.js';

const ADMIN = { email: 'admin@example.com', password: 'streams-admin-password' };

let database: ScratchDatabase;
let apiDir: string;
let workerDir: string;
let repo: TestRepo;
let api: PlatformProcess;
let worker: PlatformProcess;

beforeAll(async () => {
  database = await createScratchDatabase(inject('postgresAdminUrl'), `streams_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  apiDir = mkdtempSync(join(tmpdir(), 'slipway-streams-api-'));
  workerDir = mkdtempSync(join(tmpdir(), 'slipway-streams-worker-'));
  repo = new TestRepo('slipway-streams-repo-');
  repo.commit({
    'server.py': pythonHttpApp(`f"mark={os.environ['MARK']}"`),
    Procfile: 'web: python3 server.py\nrelease: for i in 1 2 3 4 5 6 7 8; do echo "migration step $i with $MARK"; sleep 0.1; done\n',
  });
});

afterAll(async () => {
  await stopAllStarted();
  if (workerDir) killProcessesUnder(workerDir);
  await database?.drop();
  for (const dir of [apiDir, workerDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  repo?.remove();
});

describe('log streams across processes', () => {
  it('streams a deployment a worker process runs, every line once and in order, resumable', async () => {
    const common = {
      DATABASE_URL: database.url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      ROUTER_DRAIN_TIMEOUT_MS: '1000',
      RUNTIME_STOP_GRACE_MS: '2000',
    };
    api = startPlatformProcess('api', 'api', { ...common, DATA_DIR: apiDir });
    await api.ready;
    worker = startPlatformProcess('worker', 'worker', { ...common, DATA_DIR: workerDir });
    const apiUrl = await api.ready;
    await worker.ready;
    const apiKey = await login(apiUrl);
    const headers = { 'x-api-key': apiKey };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${apiUrl}/v1${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };

    const org = await call('POST', '/organizations', { name: 'Streams' });
    const project = await call('POST', '/projects', { name: 'Shop', organization_id: org.id });
    const app = await call('POST', '/applications', { name: 'Web', project_id: project.id });
    await call('PATCH', `/applications/${app.id}/settings`, {
      github_repository: repo.dir,
      health_check_path: '/',
      deployment_timeout: 60,
    });
    const { image_id } = await call('POST', `/images/${app.id}/build`);
    await waitFor('the build', async () => (await call('GET', `/images/${image_id}/detail`)).built, 60_000, 200);
    await call('POST', `/configurations/${app.id}`, { name: 'MARK', value: '1', secret: false, buildtime: false });
    const release = async () => {
      const { release_id } = await call('POST', `/releases/${app.id}/create`);
      await waitFor('the release', async () => (await call('GET', `/releases/${release_id}/detail`)).built, 60_000, 200);
      return release_id as string;
    };
    const first = await call('POST', `/releases/${await release()}/deploy`);
    await waitFor(
      'the first deployment',
      async () => (await call('GET', `/deployments/${first.deployment_id}/detail`)).complete,
      60_000,
      200,
    );

    // A one-off run holds the application's job queue, so the next deployment waits, queued,
    // while both clients connect.
    const hold = await call('POST', `/applications/${app.id}/runs`, { command: 'sleep 3' });
    await waitFor('the run to start', async () => (await call('GET', `/runs/${hold.id}`)).status === 'running', 30_000, 100);
    const { deployment_id: id } = await call('POST', `/releases/${await release()}/deploy`);
    const whole = await openSse(`${apiUrl}/v1/deployments/${id}/log/stream`, headers);
    const dropping = await openSse(`${apiUrl}/v1/deployments/${id}/log/stream`, headers);
    expect((await call('GET', `/deployments/${id}/detail`)).started).toBeNull();

    await dropping.until((e) => e.event === 'line' && e.data.line.includes('migration step 2'), 'the second migration step');
    dropping.close();
    const seen = dropping.events.filter((e) => e.event === 'line');
    const resumed = await openSse(`${apiUrl}/v1/deployments/${id}/log/stream`, { ...headers, 'last-event-id': seen.at(-1)!.id! });

    const end = await whole.until((e) => e.event === 'end', 'the end event');
    await Promise.all([whole.ended, resumed.ended]);
    expect(end.data).toMatchObject({ status: 'complete' });
    const logText: string = (await call('GET', `/deployments/${id}/log`)).log_text;
    const expected = logText
      .split('\n')
      .filter(Boolean)
      .map((l) => l.replace(/^\S+Z /, ''));
    expect(expected.filter((l) => l.startsWith('release | migration step'))).toHaveLength(8);
    const lines = whole.events.filter((e) => e.event === 'line');
    expect(lines.map((e) => e.data.line)).toEqual(expected);
    expect(lines.map((e) => Number(e.id))).toEqual(expected.map((_, i) => i + 1));
    expect([...seen, ...resumed.events.filter((e) => e.event === 'line')].map((e) => e.data.line)).toEqual(expected);
    // The job ran in the worker process; the API process serves no applications.
    expect(worker.logLines().some((l) => l.kind === 'deploy' && l.msg === 'pipeline job started')).toBe(true);
    expect(api.logLines().some((l) => l.msg === 'pipeline job started')).toBe(false);
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
    body: JSON.stringify({ name: 'streams' }),
  });
  expect(key.status).toBe(201);
  return ((await key.json()) as { key: string }).key;
}
