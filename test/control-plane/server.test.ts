/**
 * The real server process (`node main.js`, built from src/ for the run) against a test database: the first
 * administrator from ADMIN_EMAIL/ADMIN_PASSWORD, a cookie session over a real socket,
 * production log redaction, a clean stop on SIGTERM, and data kept across a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/harness.js';
import { alive } from '../helpers/process-alive.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = { email: 'admin@example.com', password: 'first-admin-password' };

let database: Awaited<ReturnType<typeof freshDatabase>>;
let dataDir: string;
const running = new Set<ChildProcess>();

interface Server {
  url: string;
  output: () => string;
  stop: () => Promise<number | null>;
}

async function startServer(): Promise<Server> {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      ROUTER_PORT: '0',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${output}`)), 45_000);
    const check = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`server exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    output: () => output,
    stop: () =>
      new Promise((done) => {
        child.once('exit', (code) => {
          running.delete(child);
          done(code);
        });
        child.kill('SIGTERM');
      }),
  };
}

beforeAll(async () => {
  database = await freshDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'slipway-server-test-'));
});
afterAll(async () => {
  for (const child of running) child.kill('SIGKILL');
  await database?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the server process', () => {
  it('creates the first admin, serves a session, redacts credentials, stops cleanly and keeps data', async () => {
    const server = await startServer();
    expect(server.output()).toMatch(/created administrator admin <admin@example\.com>/);

    const login = await fetch(`${server.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/i);
    const cookie = setCookie.split(';')[0]!;
    const token = cookie.split('=')[1]!;

    const keyRes = await fetch(`${server.url}/v1/auth/api-keys`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'server-test' }),
    });
    const apiKey = ((await keyRes.json()) as { key: string }).key;
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const org = (await (
      await fetch(`${server.url}/v1/organizations`, { method: 'POST', headers, body: JSON.stringify({ name: 'Persisted' }) })
    ).json()) as any;
    const project = (await (
      await fetch(`${server.url}/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ name: 'P', organization_id: org.id }) })
    ).json()) as any;
    const app = (await (
      await fetch(`${server.url}/v1/applications`, { method: 'POST', headers, body: JSON.stringify({ name: 'A', project_id: project.id }) })
    ).json()) as any;
    const secret = 'server-test-secret-value-93f1';
    const created = await fetch(`${server.url}/v1/configurations/${app.id}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'TOKEN', value: secret, secret: true }),
    });
    expect(created.status).toBe(201);

    const code = await server.stop();
    expect(code, server.output().slice(-3000)).toBe(0);
    const log = server.output();
    expect(log).toMatch(/"url":"\/v1\/organizations"/); // requests were logged...
    for (const leaked of [ADMIN.password, token, apiKey, secret]) expect(log).not.toContain(leaked); // ...without credentials

    // Start again on the same database: nothing is lost, the admin is not created twice.
    const again = await startServer();
    expect(again.output()).not.toMatch(/created administrator/);
    const orgs = (await (await fetch(`${again.url}/v1/organizations`, { headers })).json()) as any[];
    expect(orgs.map((o) => o.slug)).toEqual(['persisted']);
    const vars = (await (await fetch(`${again.url}/v1/configurations/${app.id}`, { headers })).json()) as any[];
    expect(vars).toEqual([expect.objectContaining({ name: 'TOKEN', value: '**secret**', secret: true })]);
    expect(await again.stop()).toBe(0);
  });
});

/** A free loopback port (closed again at once). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** Runs the server with exactly `env` (plus PATH/HOME); resolves once it listens or exits. */
function runMain(env: Record<string, string>) {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((done) =>
    child.on('exit', (code) => {
      running.delete(child);
      done(code);
    }),
  );
  const ready = new Promise<string | null>((ok) => {
    const check = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) ok(m[1]!);
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exited.then(() => ok(null));
  });
  return { child, ready, exited, output: () => output };
}

describe('the server process with the embedded PostgreSQL', () => {
  it('after a kill -9, the next start takes over the orphaned database and stops it on SIGTERM; a failed start leaves nothing running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-embedded-test-'));
    try {
      const env = {
        DATA_DIR: dir,
        PORT: '0',
        ROUTER_PORT: '0',
        EMBEDDED_PG_PORT: String(await freePort()),
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
      };
      const postmasterPid = () => Number(readFileSync(join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

      const first = runMain(env);
      const url = await first.ready;
      expect(url, first.output().slice(-3000)).toBeTruthy();
      const login = await fetch(`${url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ADMIN),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const created = await fetch(`${url}/v1/organizations`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Survives' }),
      });
      expect(created.status).toBe(201);
      const orphan = postmasterPid();
      first.child.kill('SIGKILL');
      await first.exited;
      expect(alive(orphan)).toBe(true); // nothing can stop it when its parent is killed

      const second = runMain(env);
      const url2 = await second.ready;
      expect(url2, second.output().slice(-3000)).toBeTruthy();
      const login2 = await fetch(`${url2}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ADMIN),
      });
      const orgs = (await (
        await fetch(`${url2}/v1/organizations`, { headers: { cookie: login2.headers.get('set-cookie')!.split(';')[0]! } })
      ).json()) as Array<{ slug: string }>;
      expect(orgs.map((o) => o.slug)).toEqual(['survives']);
      const adopted = postmasterPid();
      expect(alive(orphan)).toBe(false);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      expect(alive(adopted)).toBe(false); // before: the orphan was shared and never stopped

      // The API port is taken: a one-line message, exit 1, and the database it started is stopped again.
      const { createServer } = await import('node:net');
      const blocker = createServer();
      await new Promise<void>((ok) => blocker.listen(0, '127.0.0.1', ok));
      try {
        const third = runMain({ ...env, PORT: String((blocker.address() as { port: number }).port) });
        expect(await third.ready).toBeNull();
        expect(await third.exited).toBe(1);
        expect(third.output()).toMatch(/Slipway could not start: listen EADDRINUSE.*set PORT/);
        expect(third.output()).not.toMatch(/\n\s+at /);
        expect(existsSync(join(dir, 'postgres', 'postmaster.pid'))).toBe(false);
      } finally {
        blocker.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('invalid variables stop the start naming each one, with the values a choice allows', async () => {
    const run = runMain({ DATA_DIR: dataDir, PORT: 'abc', LOG_LEVEL: 'verbose', SLIPWAY_ROLE: 'both' });
    expect(await run.exited).toBe(1);
    expect(run.output().trim()).toBe(
      'Invalid configuration: PORT: must be integer; LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent; ' +
        'SLIPWAY_ROLE: must be one of all, api, worker, edge',
    );
  }, 60_000);

  it('an S3 endpoint for backups without its bucket and keys stops the start naming them (the secret never shown)', async () => {
    const run = runMain({
      DATA_DIR: dataDir,
      BACKUP_S3_ENDPOINT: 'http://127.0.0.1:9000',
      BACKUP_S3_SECRET_ACCESS_KEY: 'secret-not-shown-4b1c',
    });
    expect(await run.exited).toBe(1);
    expect(run.output().trim()).toBe(
      'Invalid configuration: BACKUP_S3_ENDPOINT is set but BACKUP_S3_BUCKET, BACKUP_S3_ACCESS_KEY_ID are not',
    );
    expect(run.output()).not.toContain('secret-not-shown');
  }, 60_000);

  it('virtual-hosted S3 addressing on Kubernetes stops the start: CloudNativePG always addresses the store path-style', async () => {
    const run = runMain({
      DATA_DIR: dataDir,
      RUNTIME: 'kubernetes',
      BACKUP_S3_ENDPOINT: 'https://s3.example.test',
      BACKUP_S3_BUCKET: 'backups',
      BACKUP_S3_ACCESS_KEY_ID: 'id',
      BACKUP_S3_SECRET_ACCESS_KEY: 'secret-not-shown-9d2e',
      BACKUP_S3_FORCE_PATH_STYLE: 'false',
    });
    expect(await run.exited).toBe(1);
    expect(run.output().trim()).toBe(
      'Invalid configuration: BACKUP_S3_FORCE_PATH_STYLE=false cannot be honoured with RUNTIME=kubernetes: CloudNativePG ' +
        '(barman-cloud) always addresses the store at BACKUP_S3_ENDPOINT path-style (<endpoint>/<bucket>); remove the setting',
    );
    expect(run.output()).not.toContain('secret-not-shown');
  }, 60_000);

  it('an unreachable DATABASE_URL stops the start with one line naming the database (no password, no stack)', async () => {
    const port = await freePort();
    const run = runMain({
      DATABASE_URL: `postgres://slipway:pw-not-shown@127.0.0.1:${port}/nowhere`,
      DATA_DIR: dataDir,
      PORT: '0',
      ROUTER_PORT: '0',
    });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(`Slipway could not start: cannot use the database 127.0.0.1:${port}/nowhere: connect ECONNREFUSED`);
    expect(run.output()).not.toContain('pw-not-shown');
    expect(run.output()).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('RUNTIME=kubernetes without a readable kubeconfig or a reachable API server stops the start in one line', async () => {
    const missing = runMain({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      PORT: '0',
      ROUTER_PORT: '0',
      RUNTIME: 'kubernetes',
      KUBECONFIG: join(dataDir, 'no-such-kubeconfig'),
    });
    expect(await missing.exited).toBe(1);
    expect(missing.output()).toContain(
      `Slipway could not start: RUNTIME=kubernetes: cannot read the cluster credentials from KUBECONFIG ${join(dataDir, 'no-such-kubeconfig')}`,
    );

    const port = await freePort();
    const kubeconfig = join(dataDir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'c',
        clusters: [{ name: 'k', cluster: { server: `https://127.0.0.1:${port}` } }],
        users: [{ name: 'u', user: { token: 'token-not-shown' } }],
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
      }),
    );
    const unreachable = runMain({
      DATABASE_URL: database.url,
      DATA_DIR: dataDir,
      PORT: '0',
      ROUTER_PORT: '0',
      RUNTIME: 'kubernetes',
      KUBECONFIG: kubeconfig,
    });
    expect(await unreachable.exited).toBe(1);
    expect(unreachable.output()).toContain(`Slipway could not start: Kubernetes API server https://127.0.0.1:${port} is not reachable`);
    expect(unreachable.output()).not.toContain('token-not-shown');
    expect(unreachable.output()).not.toMatch(/\n\s+at /);
  }, 60_000);
});
