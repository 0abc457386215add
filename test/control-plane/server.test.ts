/**
 * The real server process (`tsx src/main.ts`) against a test database: the first
 * administrator from ADMIN_EMAIL/ADMIN_PASSWORD, a cookie session over a real socket,
 * production log redaction, a clean stop on SIGTERM, and data kept across a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = { email: 'admin@example.com', password: 'first-admin-password' };

let database: Awaited<ReturnType<typeof freshDatabase>>;
let dataDir: string;
const running = new Set<ChildProcess>();

interface Server { url: string; output: () => string; stop: () => Promise<number | null> }

async function startServer(): Promise<Server> {
  // node with the tsx loader (not the tsx wrapper) so the exit code is the server's own.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp',
      DATABASE_URL: database.url, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', ROUTER_PORT: '0',
      ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${output}`)), 45_000);
    const check = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) { clearTimeout(timer); ok(m[1]!); }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited with ${code}:\n${output}`)); });
  });
  return {
    url,
    output: () => output,
    stop: () => new Promise((done) => {
      child.once('exit', (code) => { running.delete(child); done(code); });
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
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN),
    });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/i);
    const cookie = setCookie.split(';')[0]!;
    const token = cookie.split('=')[1]!;

    const keyRes = await fetch(`${server.url}/v1/auth/api-keys`, {
      method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'server-test' }),
    });
    const apiKey = (await keyRes.json() as { key: string }).key;
    const headers = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const org = await (await fetch(`${server.url}/v1/organizations`, { method: 'POST', headers, body: JSON.stringify({ name: 'Persisted' }) })).json() as any;
    const project = await (await fetch(`${server.url}/v1/projects`, { method: 'POST', headers, body: JSON.stringify({ name: 'P', organization_id: org.id }) })).json() as any;
    const app = await (await fetch(`${server.url}/v1/applications`, { method: 'POST', headers, body: JSON.stringify({ name: 'A', project_id: project.id }) })).json() as any;
    const secret = 'server-test-secret-value-93f1';
    const created = await fetch(`${server.url}/v1/configurations/${app.id}`, { method: 'POST', headers, body: JSON.stringify({ name: 'TOKEN', value: secret, secret: true }) });
    expect(created.status).toBe(201);

    const code = await server.stop();
    expect(code, server.output().slice(-3000)).toBe(0);
    const log = server.output();
    expect(log).toMatch(/"url":"\/v1\/organizations"/); // requests were logged...
    for (const leaked of [ADMIN.password, token, apiKey, secret]) expect(log).not.toContain(leaked); // ...without credentials

    // Start again on the same database: nothing is lost, the admin is not created twice.
    const again = await startServer();
    expect(again.output()).not.toMatch(/created administrator/);
    const orgs = await (await fetch(`${again.url}/v1/organizations`, { headers })).json() as any[];
    expect(orgs.map((o) => o.slug)).toEqual(['persisted']);
    const vars = await (await fetch(`${again.url}/v1/configurations/${app.id}`, { headers })).json() as any[];
    expect(vars).toEqual([expect.objectContaining({ name: 'TOKEN', value: '**secret**', secret: true })]);
    expect(await again.stop()).toBe(0);
  });
});
