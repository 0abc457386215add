/**
 * Issue 37, "a supervised embedded database": the real server (`src/main.ts` as a child
 * process) under 20 busy API connections while PostgreSQL's postmaster is killed with SIGKILL.
 * The node process must stay up, every request must succeed or answer 503 with Retry-After
 * (never a 500, never a reset connection), the health route must name the database, and the
 * API must recover by itself with its data intact.
 * - Embedded PostgreSQL (in the server's data directory): killed three times; the server's
 *   supervisor starts it again. Then a longer outage (its directory moved away, so restarts
 *   fail) seen from the outside, the edge answering throughout.
 * - DATABASE_URL (a server the platform does not own, here one this test runs): killed under
 *   load and brought back by its owner (the test's own supervisor); the platform never tries
 *   to start it, and recovers the same way.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/platform/db/embedded.js';
import { waitFor } from '../helpers/wait.js';
import { alive } from '../helpers/process-alive.js';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = { email: 'admin@example.com', password: 'supervised-db-password' };
/** API connections kept busy at once (the figure). */
const CONNECTIONS = 20;
/** Of those, the ones that keep creating projects (the rest read). */
const WRITERS = 2;

interface Server {
  child: ChildProcess;
  url: string;
  routerPort: number;
  output: () => string;
  /** Throws (with the server's output) if the process has exited: a probe's way to stop waiting. */
  assertAlive(): void;
  headers: Record<string, string>;
  organizationId: string;
}

const running = new Set<ChildProcess>();
const dirs: string[] = [];
const databases: EmbeddedDatabase[] = [];

afterAll(async () => {
  for (const child of running) {
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
  }
  for (const database of databases) await database.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A directory short enough for an embedded server's unix socket path (107 bytes). */
function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-dbsup-'));
  dirs.push(dir);
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** `src/main.ts` with `env`; resolves once the API listens, with an API key and an organization made through it. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const routerPort = await freePort();
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      EDGE_DRIVER: 'builtin',
      HOME: process.env.HOME ?? '/tmp',
      HOST: '127.0.0.1',
      PORT: '0',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: String(routerPort),
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const collect = (d: Buffer) => {
    output += d;
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let exit: string | null = null;
  child.on('exit', (code, signal) => {
    running.delete(child);
    exit = `exited with ${code ?? signal}`;
  });
  const assertAlive = () => {
    if (exit) throw new Error(`the server ${exit}:\n${output.slice(-4000)}`);
  };
  const url = await waitFor(
    'the API to listen',
    () => {
      assertAlive();
      return /\[slipway\] API listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
    },
    { timeout: 150_000 },
  );
  const login = await fetch(`${url}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  expect(login.status).toBe(200);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const key = await fetch(`${url}/v1/auth/api-keys`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'load' }),
  });
  const headers = { 'x-api-key': ((await key.json()) as { key: string }).key, 'content-type': 'application/json' };
  const org = await fetch(`${url}/v1/organizations`, { method: 'POST', headers, body: JSON.stringify({ name: 'Survivors' }) });
  expect(org.status).toBe(201);
  const organizationId = ((await org.json()) as { id: string }).id;
  return { child, url, routerPort, output: () => output, assertAlive, headers, organizationId };
}

function postmasterPid(databaseDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null; // between a crash and the restart
  }
}

interface Tally {
  ok: number;
  unavailable: number;
  /** Anything else: a 5xx other than 503, a 503 without Retry-After, a reset connection. */
  failures: string[];
  created: string[];
}

/** Judges one answer: a success, or a 503 that says the database is unavailable and when to retry. */
async function judge(tally: Tally, what: string, request: Promise<Response>): Promise<unknown> {
  let response: Response;
  try {
    response = await request;
  } catch (err) {
    tally.failures.push(`${what}: ${(err as Error).message} (${String((err as { cause?: unknown }).cause)})`);
    return undefined;
  }
  const body = await response.text().catch((err: Error) => `(body lost: ${err.message})`);
  if (response.status === 200 || response.status === 201) {
    tally.ok++;
    return JSON.parse(body);
  }
  const retryAfter = Number(response.headers.get('retry-after'));
  if (response.status === 503 && retryAfter > 0 && /database/i.test(body)) tally.unavailable++;
  else tally.failures.push(`${what}: ${response.status} retry-after=${response.headers.get('retry-after')} ${body.slice(0, 300)}`);
  return undefined;
}

/** Keeps CONNECTIONS loops of authenticated requests busy until `stop()`; WRITERS of them create projects. */
function busyLoad(server: Server, label: string) {
  const tally: Tally = { ok: 0, unavailable: 0, failures: [], created: [] };
  const { url, headers, organizationId } = server;
  let stopping = false;
  const loops = Array.from({ length: CONNECTIONS }, async (_, n) => {
    for (let i = 0; !stopping; i++) {
      if (n < WRITERS) {
        const name = `${label}-${n}-${i}`;
        const project = (await judge(
          tally,
          `POST /v1/projects ${name}`,
          fetch(`${url}/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ name, organization_id: organizationId }) }),
        )) as { slug?: string } | undefined;
        if (project?.slug) tally.created.push(project.slug);
      } else {
        const path = i % 2 === 0 ? '/v1/organizations' : '/v1/projects';
        await judge(tally, `GET ${path}`, fetch(`${url}${path}`, { headers }));
      }
    }
  });
  return {
    tally,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return tally;
    },
  };
}

async function health(server: Server): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/v1/integrations/health`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function projectSlugs(server: Server): Promise<Set<string>> {
  const response = await fetch(`${server.url}/v1/projects`, { headers: server.headers });
  expect(response.status).toBe(200);
  return new Set(((await response.json()) as Array<{ slug: string }>).map((p) => p.slug));
}

/** What the edge answers for a host it serves no application at (it must answer, from memory). */
function edgeStatus(server: Server): Promise<number> {
  return new Promise((ok, fail) => {
    const req = httpRequest({ host: '127.0.0.1', port: server.routerPort, path: '/', headers: { host: 'nothing.example.test' } }, (res) => {
      res.resume();
      ok(res.statusCode ?? 0);
    });
    req.on('error', fail);
    req.end();
  });
}

/**
 * Rewrites a postmaster.pid to name a live process of PostgreSQL's user that is no postmaster
 * (as after a crash, once the pid is reused); returns that process. Needs root (as the suite
 * runs), else leaves the file alone.
 */
function namePidReuse(pidFile: string): ChildProcess | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const sleeper = spawn('sleep', ['600'], { uid, gid, stdio: 'ignore' });
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  lines[0] = String(sleeper.pid);
  writeFileSync(pidFile, lines.join('\n'));
  return sleeper;
}

/**
 * One round: load flowing, the postmaster killed, requests failing over to 503, then the API
 * answering again and every project created so far still there.
 */
async function killUnderLoad(server: Server, databaseDir: string, label: string, createdBefore: Set<string>) {
  const load = busyLoad(server, label);
  await waitFor('requests to flow', () => {
    server.assertAlive();
    return load.tally.ok >= CONNECTIONS * 2;
  });
  const victim = postmasterPid(databaseDir)!;
  expect(victim).toBeGreaterThan(0);
  process.kill(victim, 'SIGKILL');
  await waitFor('requests to fail over to 503', () => {
    server.assertAlive();
    return load.tally.unavailable > 0 || load.tally.failures.length > 0;
  });
  await waitFor('a new postmaster', () => {
    server.assertAlive();
    const pid = postmasterPid(databaseDir);
    return pid !== null && pid !== victim && alive(pid);
  });
  await waitFor(
    'the API to answer again',
    async () => {
      server.assertAlive();
      return (await health(server)).status === 200;
    },
    { timeout: 60_000 },
  );
  const okAfter = load.tally.ok;
  await waitFor('requests to flow again', () => {
    server.assertAlive();
    return load.tally.ok >= okAfter + CONNECTIONS * 2;
  });
  const tally = await load.stop();
  expect(tally.failures, server.output().slice(-4000)).toEqual([]);
  server.assertAlive();
  expect(tally.created.length).toBeGreaterThan(0);
  // Every project created (201) in this round or an earlier one is still there.
  const slugs = await projectSlugs(server);
  for (const slug of [...createdBefore, ...tally.created]) expect(slugs.has(slug), slug).toBe(true);
  for (const slug of tally.created) createdBefore.add(slug);
}

describe('the embedded PostgreSQL killed under load', () => {
  let server: Server;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = scratchDir();
    server = await startServer({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(40000 + Math.floor(Math.random() * 20000)) });
  }, 180_000);

  it('keeps the process alive, answers 503 with Retry-After meanwhile, restarts PostgreSQL and recovers, three times', async () => {
    const created = new Set<string>();
    for (let round = 1; round <= 3; round++) await killUnderLoad(server, join(dataDir, 'postgres'), `round${round}`, created);
    expect(server.output()).toMatch(/the embedded PostgreSQL was killed by SIGKILL; restarting it/);
    expect(server.output()).toMatch(/the embedded PostgreSQL runs again/);
  }, 240_000);

  it('stays up through a longer outage (restarts failing), names the database in the health route, and recovers when it can start again', async () => {
    const databaseDir = join(dataDir, 'postgres');
    const away = join(dataDir, 'postgres-away');
    const victim = postmasterPid(databaseDir)!;
    const { headers, organizationId } = server;
    let decoy: ChildProcess | null = null;
    onTestFinished(() => void decoy?.kill('SIGKILL'));
    // Moved away, the cluster cannot start: the supervisor keeps trying with backoff.
    renameSync(databaseDir, away);
    process.kill(victim, 'SIGKILL');
    try {
      const down = await waitFor('the health route to report the database down', async () => {
        server.assertAlive();
        const h = await health(server);
        return h.status === 503 ? h : null;
      });
      expect(down.body).toEqual({
        status: 'unavailable',
        database: 'unreachable',
        disk: 'ok',
        components: { database: 'down', job_store: 'down', runtime: 'ok', edge: 'ok' },
      });
      for (const path of ['/v1/organizations', '/v1/projects', `/v1/organizations/${organizationId}`, '/v1/auth/api-keys']) {
        const response = await fetch(`${server.url}${path}`, { headers });
        expect(response.status, path).toBe(503);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await response.json()).toEqual({ status: 503, message: expect.stringMatching(/database/i) });
      }
      const write = await fetch(`${server.url}/v1/projects`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'during-outage', organization_id: organizationId }),
      });
      expect(write.status).toBe(503);
      // The edge serves from memory: it answers (here: no application at that host) while the database is away.
      expect(await edgeStatus(server)).toBe(404);
      await waitFor('a failed restart to be reported', () => {
        server.assertAlive();
        return /the embedded PostgreSQL did not start again/.test(server.output());
      });
      // The dead postmaster's lock file now names a live process of the server's user (its pid
      // reused): PostgreSQL alone would refuse to start over it; the supervisor clears it.
      decoy = namePidReuse(join(away, 'postmaster.pid'));
    } finally {
      renameSync(away, databaseDir);
    }
    await waitFor(
      'the API to answer again',
      async () => {
        server.assertAlive();
        return (await health(server)).status === 200;
      },
      { timeout: 90_000 },
    );
    expect((await health(server)).body).toEqual({
      status: 'ok',
      database: 'ok',
      disk: 'ok',
      components: { database: 'ok', job_store: 'ok', runtime: 'ok', edge: 'ok' },
    });
    const orgs = await fetch(`${server.url}/v1/organizations`, { headers });
    expect(orgs.status).toBe(200);
    expect(((await orgs.json()) as Array<{ id: string }>).map((o) => o.id)).toContain(organizationId);
    const again = await fetch(`${server.url}/v1/projects`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'after-outage', organization_id: organizationId }),
    });
    expect(again.status).toBe(201);
    // Only the lock file was cleared: the process that had the pid is left alone.
    if (decoy) expect(alive(decoy.pid!)).toBe(true);
  }, 180_000);
});

describe('a DATABASE_URL server killed under load', () => {
  it('answers 503 while it is down, never starts it itself, and recovers once its owner has it back', async () => {
    // The database the platform does not own: this test's own embedded server, restarted by the test process's supervisor.
    const databaseDir = scratchDir();
    const database = await startEmbeddedPostgres(databaseDir, 40000 + Math.floor(Math.random() * 20000));
    databases.push(database);
    const server = await startServer({ DATA_DIR: scratchDir(), DATABASE_URL: database.url });
    await killUnderLoad(server, join(databaseDir, 'postgres'), 'external', new Set());
    expect(server.output()).toMatch(/the database is unreachable/);
    expect(server.output()).toMatch(/the database answers again/);
    expect(server.output()).not.toMatch(/embedded PostgreSQL/);
  }, 240_000);
});
