/**
 * `slipway exec` (issue 33's shell into an instance), over a listening server, real PostgreSQL,
 * the pipeline and the sandboxed local runtime, one deployed app shared: the CLI as a child
 * process, without a terminal (`-- CMD`) and in one (util-linux `script`), through the WebSocket;
 * what the command sees (the instance's files, processes and user, no capabilities), secrets
 * masked, exit codes, the session record and audit entry, and the refusals.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createHarness, type Harness } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait.js';
import { BIN, slipway, type CliResult } from '../cli/slipway.js';
import { sandboxMissing } from '../isolation/fixtures.js';

const missing = sandboxMissing();
if (missing) console.warn(missing);

const SECRET = 'exec-secret-5d1f0c7a';

let h: Harness;
let repo: TestRepo;
let home: string;
let env: Record<string, string>;
let server: string;
let apiKey: string;
let appId: string;

function cli(args: string[], options: { input?: string } = {}): Promise<CliResult> {
  return slipway(args, env, { cwd: repo.dir, input: options.input });
}

function expectOk(r: CliResult) {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

async function api(method: string, url: string, payload?: unknown, key = apiKey) {
  return h.app.inject({ method: method as 'GET', url, headers: { 'x-api-key': key }, ...(payload ? { payload } : {}) });
}

beforeAll(async () => {
  if (missing) return;
  h = await createHarness(
    { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
    { jobs: true, runtime: true },
  );
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  server = `http://127.0.0.1:${address.port}`;
  const user = await h.user();
  apiKey = user.apiKey;
  home = mkdtempSync(join(tmpdir(), 'slipway-exec-'));
  env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SLIPWAY_SERVER: server, SLIPWAY_API_KEY: apiKey };
  repo = new TestRepo();
  repo.commit({
    'server.js': `require('http').createServer((q, s) => s.end('up')).listen(Number(process.env.PORT), '127.0.0.1');\n`,
    // A file only the instance's own (private) /tmp has: seen from exec, it is the same mount namespace.
    Procfile: 'web: echo "written by the instance" > /tmp/marker && exec node server.js\n',
  });
  expectOk(await cli(['orgs', 'create', 'Exec']));
  expectOk(await cli(['projects', 'create', 'Shop', '--org', 'exec']));
  expectOk(await cli(['apps', 'create', 'Web', '--project', 'exec/shop', '--repo', repo.dir, '--branch', 'main', '--link']));
  expectOk(await cli(['config', 'set', `API_TOKEN=${SECRET}`, '--secret']));
  expectOk(await cli(['deploy', '--wait']));
  appId = (await api('GET', '/v1/applications/exec/shop/web')).json().id;
}, 180_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe.skipIf(missing)('slipway exec', () => {
  it('runs a command inside the instance: its files, processes and user, no capabilities, secrets masked, its exit code', async () => {
    const script = [
      'cat /tmp/marker',
      'echo "me=$(id -u)"',
      // The instance's process, seen in the same PID namespace, runs as the same user.
      'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null | grep -q "^node server.js" && stat -c "instance=%u" $p; done',
      'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status',
      'echo "pwd=$(pwd)"',
      'echo "token=$API_TOKEN"',
      'echo to-stderr >&2',
      'exit 3',
    ].join('; ');
    const r = await cli(['exec', '--', 'sh', '-c', script]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toContain('written by the instance');
    const me = /me=(\d+)/.exec(r.stdout)?.[1];
    expect(me, r.stdout).toBeDefined();
    expect(r.stdout).toContain(`instance=${me}`);
    expect(Number(me)).not.toBe(0);
    expect(r.stdout).toMatch(/CapEff:\s+0{16}/);
    expect(r.stdout).toMatch(/CapBnd:\s+0{16}/);
    expect(r.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(r.stdout).toContain('token=**secret**');
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    expect(r.stderr).toContain('to-stderr');

    // Standard input goes through, and its end ends the command's input.
    const echoed = expectOk(await cli(['exec', '-i', 'web.1', '--', 'wc', '-c'], { input: 'x'.repeat(200_000) }));
    expect(echoed.stdout.trim()).toBe('200000');

    // Recorded and audited: who, which instance, what command, how it ended.
    const session = await h.ctx.db.selectFrom('exec_sessions').selectAll().where('exit_code', '=', 3).executeTakeFirstOrThrow();
    expect(session).toMatchObject({
      application_id: appId,
      instance_name: 'web.1',
      tty: false,
      command: expect.stringContaining('exit 3'),
    });
    expect(session.started_at).not.toBeNull();
    expect(session.finished_at).not.toBeNull();
    const audit = (await api('GET', '/v1/organizations/exec/audit-log?limit=100')).json();
    const entry = audit.items.find((e: { resource_id: string | null }) => e.resource_id === session.id || e.resource_id === 'web.1');
    const entries = audit.items.filter((e: { action: string }) => /\/exec$/.test(e.action));
    expect(entries.length, JSON.stringify(audit.items.map((e: { action: string }) => e.action))).toBeGreaterThanOrEqual(2);
    expect(entry ?? entries[entries.length - 1]).toMatchObject({
      actor: { credential_kind: 'api_key' },
      action: expect.stringMatching(/^POST \/v1\/applications\/:application_id\/(instances\/:instance\/)?exec$/),
    });
    expect(JSON.stringify(entries)).toContain('exit 3');
  });

  it.skipIf(!existsSync('/usr/bin/script'))('gives an interactive shell a terminal that follows its size', async () => {
    const child = spawn('script', ['-qfec', `${process.execPath} ${BIN} exec`, '/dev/null'], {
      cwd: repo.dir,
      env: { ...env, PATH: process.env.PATH ?? '', SLIPWAY_CLI_SOURCE: '1', TERM: 'xterm', COLUMNS: '100', LINES: '30' },
    });
    let screen = '';
    child.stdout.on('data', (c) => {
      screen += c;
    });
    const exited = new Promise<number>((r) => child.on('close', (code) => r(code ?? 1)));
    child.stdin.write('tty; echo "term=$TERM size=$(stty size) product=$((6*7))"; cat /tmp/marker\r');
    await waitFor('the shell to answer', async () => /product=42/.test(screen) && /written by the instance/.test(screen), 30_000);
    expect(screen).toMatch(/\/dev\/pts\/\d+/);
    expect(screen).toContain('term=xterm');
    expect(screen).toMatch(/size=\d+ \d+/);
    child.stdin.write('exit 4\r');
    expect(await exited, screen).toBe(4);
    const session = await h.ctx.db.selectFrom('exec_sessions').selectAll().where('exit_code', '=', 4).executeTakeFirstOrThrow();
    expect(session).toMatchObject({ tty: true, command: null });
  });

  it('resizes the terminal over the WebSocket, and a session attaches only once', async () => {
    const opened = await api('POST', `/v1/applications/${appId}/instances/web.1/exec`, { command: 'sleep 0.5; stty size', tty: true });
    expect(opened.statusCode, opened.body).toBe(201);
    const { stream_path } = opened.json();
    const ws = new WebSocket(`${server.replace('http', 'ws')}${stream_path}?rows=20&cols=70`, { headers: { 'x-api-key': apiKey } });
    let output = '';
    let exit: { exit_code: number } | null = null;
    ws.on('message', (data, isBinary) => {
      const bytes = data as Buffer;
      if (isBinary) output += bytes.subarray(1).toString();
      else exit = JSON.parse(bytes.toString());
    });
    await new Promise<void>((r) => ws.once('open', () => r()));
    ws.send(JSON.stringify({ type: 'resize', rows: 33, cols: 111 }));
    await new Promise<void>((r) => ws.once('close', () => r()));
    expect(output).toContain('33 111');
    expect(exit).toMatchObject({ type: 'exit', exit_code: 0 });

    // Used once: attaching again is refused before any upgrade.
    const again = new WebSocket(`${server.replace('http', 'ws')}${stream_path}`, { headers: { 'x-api-key': apiKey } });
    const status = await new Promise<number>((r) => {
      again.on('unexpected-response', (_q, response) => r(response.statusCode ?? 0));
      again.on('error', () => r(-1));
    });
    expect(status).toBe(404);
  });

  it('refuses: an unknown instance, a key without the run action, a non-member, a protected environment for a member', async () => {
    expect((await api('POST', `/v1/applications/${appId}/instances/web.9/exec`, { command: 'true' })).statusCode).toBe(404);
    expect((await api('POST', `/v1/applications/${appId}/instances/web.1/exec`, { command: 'true', shell: 1 })).statusCode).toBe(422);

    const narrow = await api('POST', '/v1/auth/api-keys', { name: 'read-only', organization: 'exec', actions: ['read', 'deploy'] });
    expect(narrow.statusCode, narrow.body).toBe(201);
    const refused = await api('POST', `/v1/applications/${appId}/exec`, { command: 'true' }, narrow.json().key);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toMatch(/run/);

    const stranger = await h.user();
    expect((await api('POST', `/v1/applications/${appId}/exec`, { command: 'true' }, stranger.apiKey)).statusCode).toBe(403);

    // A member (not an admin) of the organization, on its protected production.
    const member = await h.user();
    expect((await api('POST', '/v1/organizations/exec/members', { username: member.username })).statusCode).toBeLessThan(300);
    const protect = await api('PATCH', `/v1/workspaces/exec/projects/shop/envs/production`, { protected: true });
    expect(protect.statusCode, protect.body).toBe(200);
    const locked = await api('POST', `/v1/applications/${appId}/exec`, { command: 'true' }, member.apiKey);
    expect(locked.statusCode, locked.body).toBe(403);
    expect(locked.json().message).toMatch(/protected/);
    expect((await api('POST', `/v1/applications/${appId}/exec`, { command: 'true' })).statusCode).toBe(201);
  });
});
