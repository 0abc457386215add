/**
 * Issue 27, class 6 (forged signals), the channel itself: Caddy's access log reaches the
 * platform on a unix socket in a directory only the platform's user may enter, every line is
 * checked field by field, and no line, however long, is held whole.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAccessLine } from '../../src/platform/edge/caddy-access-log.js';
import { waitFor } from '../helpers/wait.js';

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({
    request: { host: 'a.example', method: 'GET', uri: '/', remote_ip: '192.0.2.1' },
    status: 200,
    duration: 0.01,
    ...fields,
  });

describe('parseAccessLine: only well-formed lines of the fields the edge reads', () => {
  it('accepts a Caddy line and refuses every other shape', () => {
    expect(parseAccessLine(line({}))).toEqual({
      request: { host: 'a.example', method: 'GET', uri: '/', remote_ip: '192.0.2.1' },
      status: 200,
      duration: 0.01,
    });
    const refused = [
      'not json',
      '[]',
      'null',
      '"text"',
      line({ status: '500' }),
      line({ status: 500.5 }),
      line({ status: 1e9 }),
      line({ status: undefined }),
      line({ duration: -1 }),
      line({ duration: 1e12 }),
      line({ duration: 'slow' }),
      line({ request: null }),
      line({ request: ['a.example'] }),
      line({ request: { method: 'GET', uri: '/' } }),
      line({ request: { host: 42, method: 'GET', uri: '/' } }),
      line({ request: { host: 'a'.repeat(400), method: 'GET', uri: '/' } }),
      line({ request: { host: 'a.example', method: 'GET', uri: '/', remote_ip: { x: 1 } } }),
    ];
    for (const text of refused) expect(parseAccessLine(text), text).toBeNull();
  });
});

describe('the access-log socket', () => {
  let dir: string;
  let receiver: ChildProcess;
  let output = '';
  const socketDir = () => join(dir, 'edge');
  const socketPath = () => join(socketDir(), 'caddy-access.sock');
  const counts = () =>
    JSON.parse(output.trim().split('\n').at(-1)!) as { entries: number; dropped: Record<string, number>; heapMb: number };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-access-log-'));
    // The data directory is world-searchable here: the socket's own directory must hold alone.
    chmodSync(dir, 0o755);
    // A 48 MB heap: the old receiver, which kept an unended line whole, died of a few hundred MB.
    receiver = spawn(
      process.execPath,
      ['--max-old-space-size=48', '--import', 'tsx', join(import.meta.dirname, 'access-log-receiver.ts'), socketDir()],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    receiver.stdout!.on('data', (d) => (output += d));
    await waitFor('the receiver', () => output.includes('ready'), 20_000, 50);
  }, 30_000);

  afterAll(async () => {
    if (receiver && receiver.exitCode === null) {
      receiver.kill('SIGTERM');
      await once(receiver, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('lives in a directory only its owner can enter; another user cannot connect', () => {
    const stat = statSync(socketDir());
    expect(stat.uid).toBe(process.getuid!());
    expect(stat.mode & 0o777).toBe(0o700);
    expect(statSync(socketPath()).mode & 0o777).toBe(0o600);
    // An unprivileged user (nobody) tries to connect and write a forged line.
    const script = `const s = require('net').connect(${JSON.stringify(socketPath())});
      s.on('connect', () => { s.end('{}\\n'); console.log('connected'); });
      s.on('error', (e) => console.log(e.code));`;
    const tried = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10_000 });
    expect(tried.stdout.trim()).toBe('EACCES');
  });

  it('drops an endless line (256 MB) and malformed lines with counts, in a bounded heap, and keeps counting good lines', async () => {
    const socket = connect(socketPath());
    await once(socket, 'connect');
    const write = async (text: string | Buffer) => {
      if (!socket.write(text)) await once(socket, 'drain');
    };
    await write(line({}) + '\n');
    const mb = Buffer.alloc(1024 * 1024, 'x');
    for (let i = 0; i < 256; i++) await write(mb);
    await write('\n');
    for (let i = 0; i < 100; i++) await write(`{"request": "broken ${i}"\n`);
    for (let i = 0; i < 100; i++) await write(line({ status: 'nope' }) + '\n');
    for (let i = 0; i < 10; i++) await write(line({}) + '\n');
    socket.end();
    const final = await waitFor(
      'the counts',
      () => {
        const c = counts();
        return c.entries === 11 && c.dropped.malformed === 200 ? c : null;
      },
      60_000,
      100,
    );
    expect(receiver.exitCode).toBeNull();
    expect(final.dropped).toEqual({ malformed: 200, oversized: 1, unknown_host: 0 });
    expect(final.heapMb).toBeLessThan(48);
  }, 120_000);
});

describe('the access-log socket with Caddy in its own group (CADDY_ACCESS_LOG_GID)', () => {
  /** An unused group id standing for Caddy's group; the uid trying to connect is nobody's. */
  const CADDY_GID = 64_999;
  let dir: string;
  let receiver: ChildProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-access-log-group-'));
    chmodSync(dir, 0o755);
    let output = '';
    receiver = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'access-log-receiver.ts'), join(dir, 'edge'), String(CADDY_GID)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    receiver.stdout!.on('data', (d) => (output += d));
    await waitFor('the receiver', () => output.includes('ready'), 20_000, 50);
  }, 30_000);

  afterAll(async () => {
    if (receiver && receiver.exitCode === null) {
      receiver.kill('SIGTERM');
      await once(receiver, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("lets that group's members connect (search on the directory, write on the socket), and nobody else", () => {
    const socketDir = join(dir, 'edge');
    const socketPath = join(socketDir, 'caddy-access.sock');
    expect(statSync(socketDir)).toMatchObject({ gid: CADDY_GID });
    expect(statSync(socketDir).mode & 0o777).toBe(0o710);
    expect(statSync(socketPath)).toMatchObject({ gid: CADDY_GID });
    expect(statSync(socketPath).mode & 0o777).toBe(0o660);
    const script = `const s = require('net').connect(${JSON.stringify(socketPath)});
      s.on('connect', () => { s.end(); console.log('connected'); });
      s.on('error', (e) => console.log(e.code));`;
    const as = (gid: number) =>
      spawnSync(process.execPath, ['-e', script], { uid: 65534, gid, encoding: 'utf8', timeout: 10_000 }).stdout.trim();
    expect(as(CADDY_GID)).toBe('connected');
    expect(as(65534)).toBe('EACCES');
  });
});
