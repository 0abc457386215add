/**
 * The SSH gateway (issues 29 and 34) over a listening server, real PostgreSQL, the pipeline and
 * the sandboxed local runtime, one application shared: OpenSSH's `ssh` and plain `git` as child
 * processes. Keys registered through the CLI; `git push` over SSH deploys (its output ends with
 * the URL); an unregistered key and a non-member are refused with the reason; Ancla's exec route
 * hands a one-use token the gateway attaches onto the exec core, exit codes passed through.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slipway } from '../cli/slipway.js';
import { TestRepo } from '../helpers/git-repo.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { pythonHttpApp } from '../helpers/python-app.js';
import { createApp, type TestApp } from '../pipeline-build/fixtures.js';
import { sandboxMissing } from '../isolation/fixtures.js';
import { SSH_LIMITS, sourceOf } from '../../src/modules/ssh-gateway/ssh-gateway.js';

const missing = sandboxMissing();
if (missing) console.warn(`[test/ssh] ${missing}`);

let h: Harness;
let t: TestApp;
let port: number;
let home: string;
let repo: TestRepo;

type Run = { code: number; stdout: string; stderr: string };

function run(command: string, args: string[], env: Record<string, string> = {}, cwd?: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { PATH: process.env.PATH, HOME: home, ...env }, timeout: 170_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** OpenSSH options of a client that knows nothing of this server and offers only `key`. */
const sshOptions = (key: string | null) => [
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  ...(key ? ['-i', key, '-o', 'IdentitiesOnly=yes'] : ['-o', 'IdentitiesOnly=yes', '-o', 'IdentityFile=/dev/null']),
  '-p',
  String(port),
];

function newKey(name: string) {
  const file = join(home, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', file]);
  return file;
}

async function addKey(user: TestUser, file: string) {
  const added = await slipway(['ssh-keys', 'add', `${file}.pub`], { HOME: home, SLIPWAY_SERVER: server(), SLIPWAY_API_KEY: user.apiKey });
  expect(added.code, added.stderr).toBe(0);
  return added;
}

let baseUrl = '';
const server = () => baseUrl;

function push(key: string) {
  const ssh = ['ssh', ...sshOptions(key)].join(' ');
  return run('git', ['push', `ssh://git@127.0.0.1:${port}/${t.orgSlug}/shop/web.git`, 'main'], { GIT_SSH_COMMAND: ssh }, repo.dir);
}

async function openExec(body: Record<string, unknown> = { process: 'web' }) {
  const opened = await h.app.inject({
    method: 'POST',
    url: `/api/v1/workspaces/${t.orgSlug}/projects/shop/envs/production/services/web/exec`,
    headers: t.user.headers,
    payload: body,
  });
  expect(opened.statusCode, opened.body).toBe(201);
  return opened.json() as { host: string; port: number; token: string; websocket_url: string; instance: string; session_id: string };
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = probe.address() as { port: number };
      probe.close(() => resolve(p));
    });
  });

beforeAll(async () => {
  if (missing) return;
  port = await freePort();
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 1000,
      ROUTER_DRAIN_TIMEOUT_MS: 1000,
      SSH_PORT: port,
      HOST: '127.0.0.1',
    },
    { jobs: true, runtime: true },
  );
  baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  t = await createApp(h, { auto_deploy_branch: 'main', health_check_path: '/', deployment_timeout: 60 });
  home = mkdtempSync(join(tmpdir(), 'slipway-ssh-'));
  repo = new TestRepo('slipway-ssh-push-');
  repo.commit({ 'server.py': pythonHttpApp("'pushed over ssh'"), Procfile: 'web: python3 server.py\n' }, 'first');
}, 60_000);

afterAll(async () => {
  await h?.close();
  repo?.remove();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe.skipIf(missing)('the SSH gateway', () => {
  let owner: string;

  it('registers, lists and removes SSH keys (slipway ssh-keys), with OpenSSH fingerprints', async () => {
    owner = newKey('owner');
    const fingerprint = execFileSync('ssh-keygen', ['-l', '-f', `${owner}.pub`])
      .toString()
      .split(' ')[1]!;
    const added = await addKey(t.user, owner);
    expect(added.stdout).toContain(fingerprint);
    const env = { HOME: home, SLIPWAY_SERVER: baseUrl, SLIPWAY_API_KEY: t.user.apiKey };
    const listed = await slipway(['ssh-keys', 'list'], env);
    expect(listed.stdout).toContain(fingerprint);
    expect(listed.stdout).toContain('owner@test');
    // One key names one user: registering it again (by anyone) is refused.
    const again = await h.app.inject({
      method: 'POST',
      url: '/v1/users/me/ssh-keys',
      headers: t.user.headers,
      payload: { public_key: readFileSync(`${owner}.pub`, 'utf8') },
    });
    expect(again.statusCode).toBe(409);
    const privateKey = await h.app.inject({
      method: 'POST',
      url: '/v1/users/me/ssh-keys',
      headers: t.user.headers,
      payload: { public_key: readFileSync(owner, 'utf8') },
    });
    expect(privateKey.statusCode).toBe(422);
    expect(privateKey.json().message).toContain('private key');
    const spare = newKey('spare');
    const spareAdded = await h.app.inject({
      method: 'POST',
      url: '/v1/users/me/ssh-keys',
      headers: t.user.headers,
      payload: { public_key: readFileSync(`${spare}.pub`, 'utf8'), name: 'spare' },
    });
    expect(spareAdded.statusCode, spareAdded.body).toBe(201);
    const removed = await slipway(['ssh-keys', 'remove', spareAdded.json().id], env);
    expect(removed.code, removed.stderr).toBe(0);
    const after = await h.app.inject({ method: 'GET', url: '/v1/users/me/ssh-keys', headers: t.user.headers });
    expect(after.json().map((k: { name: string }) => k.name)).toEqual(['owner@test']);
  });

  it('deploys a git push over SSH by a registered key, the log and the URL in the push output', async () => {
    const pushed = await push(owner);
    const output = `${pushed.stdout}${pushed.stderr}`;
    expect(output).toContain('remote: ----- Build');
    expect(output).toMatch(/remote: Deployed to production: \S+/);
    expect(pushed.code, output).toBe(0);
  }, 180_000);

  it('refuses an unregistered key and a non-member, each with the reason', async () => {
    const stranger = newKey('stranger');
    const unregistered = await push(stranger);
    expect(unregistered.code).not.toBe(0);
    expect(unregistered.stderr).toContain('none of the offered SSH keys is registered');
    const outsider = await h.user();
    const outsiderKey = newKey('outsider');
    await addKey(outsider, outsiderKey);
    const refused = await push(outsiderKey);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`${outsider.username} is not a member`);
    // Only git's commands run for a key's user: no shell, no other command.
    const command = await run('ssh', [...sshOptions(outsiderKey), 'git@127.0.0.1', 'id']);
    expect(command.code).toBe(1);
    expect(command.stderr).toContain('Only git-receive-pack');
  }, 60_000);

  it('runs the Ancla CLI exec through a one-use token: exit codes, a terminal, a used or wrong token refused', async () => {
    const plain = await openExec({ process: 'web', command: '/bin/sh' });
    expect(plain.port).toBe(port);
    expect(plain.websocket_url).toMatch(/^ws:\/\/.+\/stream$/);
    expect(plain.instance).toBe('web.1');
    const ran = await run('ssh', [
      ...sshOptions(null),
      `token:${plain.token}@${plain.host}`,
      'cat /tmp/../etc/hostname >/dev/null; echo inside; exit 3',
    ]);
    expect(ran.stdout).toContain('inside');
    expect(ran.code).toBe(3);
    // The token attached its session once: used again, it is refused with the reason.
    const reused = await run('ssh', [...sshOptions(null), `token:${plain.token}@127.0.0.1`, 'true']);
    expect(reused.code).toBe(255);
    expect(reused.stderr).toContain('unknown, used already or expired');
    const wrong = await run('ssh', [...sshOptions(null), 'token:not-a-real-token-123@127.0.0.1', 'true']);
    expect(wrong.code).toBe(255);
    expect(wrong.stderr).toContain('unknown, used already or expired');

    const tty = await openExec();
    const inTerminal = await run('ssh', [
      '-tt',
      ...sshOptions(null),
      `token:${tty.token}@127.0.0.1`,
      'test -t 0 && echo has-a-terminal; exit 5',
    ]);
    expect(inTerminal.stdout).toContain('has-a-terminal');
    expect(inTerminal.code).toBe(5);
    const session = await h.ctx.db.selectFrom('exec_sessions').selectAll().where('id', '=', tty.session_id).executeTakeFirstOrThrow();
    expect(session.tty).toBe(true);
    expect(session.exit_code).toBe(5);
    expect(session.ssh_token_hash).not.toContain(tty.token);
  }, 60_000);

  it('keeps a slot for others when one address opens connections and says nothing', async () => {
    /** Opens a raw TCP connection: its first bytes (the server's identification), or '' if it was closed first. */
    const openRaw = () =>
      new Promise<{ socket: Socket; greeting: string }>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('data', (data) => resolve({ socket, greeting: data.toString() }));
        socket.once('close', () => resolve({ socket, greeting: '' }));
        socket.on('error', () => {});
      });
    const held = await Promise.all(Array.from({ length: SSH_LIMITS.connectionsPerAddress }, openRaw));
    try {
      expect(held.every((c) => c.greeting.startsWith('SSH-2.0-Slipway'))).toBe(true);
      expect((await openRaw()).greeting).toBe('');
    } finally {
      for (const c of held) c.socket.destroy();
    }
    // Their slots come back once they close.
    await expect
      .poll(async () => {
        const again = await openRaw();
        again.socket.destroy();
        return again.greeting;
      })
      .toMatch(/^SSH-2\.0-Slipway/);
    // IPv6 counts by /64 (what one host is usually given), IPv4-mapped as IPv4.
    expect(sourceOf('2001:db8::1')).toBe(sourceOf('2001:db8:0:0:ffff::2'));
    expect(sourceOf('2001:db8:0:1::1')).not.toBe(sourceOf('2001:db8::1'));
    expect(sourceOf('::ffff:127.0.0.1')).toBe('127.0.0.1');
  });
});
