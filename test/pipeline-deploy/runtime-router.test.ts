import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalProcessDriver } from '../../src/platform/runtime/local/local-driver.js';
import type { InstanceSpec, InstanceStatus } from '../../src/platform/runtime/port.js';
import { waitHealthy } from '../../src/platform/runtime/health-check.js';
import { RouterServer } from '../../src/platform/edge/router-server.js';
import { routerGet } from '../helpers/router-get.js';
import { waitFor } from '../helpers/wait.js';

/** A tiny HTTP app: answers its name and PORT; prints its secret to check scrubbing. */
const APP = `
const http = require('http');
console.log('starting with secret ' + process.env.SECRET_TOKEN);
http.createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); process.exit(3); }
  res.end(process.env.NAME + ':' + process.env.PORT + ':' + req.headers.host);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let dir: string;
let driver: LocalProcessDriver;
let router: RouterServer;
const changes: InstanceStatus[] = [];

function spec(id: string, name: string, extra: Partial<InstanceSpec> = {}): InstanceSpec {
  return {
    id,
    labels: { applicationId: 'a', environmentId: 'e', releaseId: 'r', deploymentId: 'd', processType: 'web', ordinal: 1 },
    command: 'node app.js',
    artifactPath: dir,
    env: { NAME: name, SECRET_TOKEN: 'hunter2-very-secret' },
    listen: true,
    secrets: ['hunter2-very-secret'],
    ...extra,
  };
}

const get = (port: number, host: string, path = '/') => routerGet(port, host, path);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slipway-runtime-'));
  writeFileSync(join(dir, 'app.js'), APP);
  driver = new LocalProcessDriver({ logDir: join(dir, 'logs'), restartBackoffMs: 50, stopGraceMs: 2000 });
  driver.onChange((s) => changes.push(s));
  router = new RouterServer({ host: '127.0.0.1', port: 0 });
  await router.listen();
});

afterAll(async () => {
  await driver?.shutdown();
  await router?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('local driver and router', () => {
  it('runs an instance with PORT, scrubs its output, reports usage and stops its process group', async () => {
    const s = await driver.start(spec('i1', 'one'));
    expect(s.port).toBeGreaterThan(0);
    expect(await waitHealthy({ host: s.host!, port: s.port!, path: '/' }, Date.now() + 5000)).toBe(true);
    const usage = await driver.usage();
    expect(usage.get('i1')!.memoryBytes).toBeGreaterThan(1024 * 1024);
    expect(usage.get('i1')!.cpuMillicores).toBeGreaterThanOrEqual(0);
    const pid = driver.status('i1')!.pid!;
    await driver.stop('i1');
    expect(() => process.kill(pid, 0)).toThrow();
    const log = readFileSync(join(dir, 'logs', 'i1.log'), 'utf8');
    expect(log).toContain('starting with secret **secret**');
    expect(log).not.toContain('hunter2');
  });

  it('restarts a crashed instance with backoff and counts restarts', async () => {
    const s = await driver.start(spec('i2', 'two'));
    await waitHealthy({ host: s.host!, port: s.port!, path: '/' }, Date.now() + 5000);
    await get(s.port!, 'x', '/crash');
    await waitFor(
      'i2 restarting after its crash',
      () => driver.status('i2')!.restartCount === 1 && driver.status('i2')!.state === 'starting',
      { timeout: 10_000, every: 20 },
    );
    expect(changes.some((c) => c.id === 'i2' && c.state === 'crashed' && c.lastExit === 'exit code 3')).toBe(true);
    expect(await waitHealthy({ host: s.host!, port: s.port!, path: '/' }, Date.now() + 5000)).toBe(true);
    await driver.stop('i2');
  });

  it('runs one-off processes with a timeout', async () => {
    const lines: string[] = [];
    const ok = await driver.runOnce({
      command: 'echo hello $SECRET_TOKEN; exit 4',
      artifactPath: dir,
      env: { SECRET_TOKEN: 'abc-secret' },
      secrets: ['abc-secret'],
      timeoutMs: 5000,
      onOutput: (l) => lines.push(l),
    });
    expect(ok).toMatchObject({ exitCode: 4, timedOut: false });
    expect(lines).toEqual(['hello **secret**']);
    const gone = await driver.runOnce({
      command: 'true',
      artifactPath: join(dir, 'missing'),
      env: {},
      secrets: [],
      timeoutMs: 5000,
      onOutput: (l) => lines.push(l),
    });
    expect(gone.exitCode).toBe(127);
    const slow = await driver.runOnce({ command: 'sleep 10', artifactPath: dir, env: {}, secrets: [], timeoutMs: 200, onOutput: () => {} });
    expect(slow.timedOut).toBe(true);
  });

  it('routes by host round-robin, 404s unknown hosts, 503s without ready instances, switches atomically', async () => {
    const a = await driver.start(spec('ra', 'A'));
    const b = await driver.start(spec('rb', 'B'));
    for (const s of [a, b]) await waitHealthy({ host: s.host!, port: s.port!, path: '/' }, Date.now() + 5000);
    const host = 'web.proj.org.localhost';
    router.table.set(
      host,
      [a, b].map((s) => ({ instanceId: s.id, host: s.host!, port: s.port! })),
    );
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const r = await get(router.port, `${host}:${router.port}`);
      expect(r.status).toBe(200);
      seen.add(r.body.split(':')[0]!);
    }
    expect([...seen].sort()).toEqual(['A', 'B']);
    expect((await get(router.port, 'nobody.localhost')).status).toBe(404);
    router.table.setReady('ra', false);
    router.table.setReady('rb', false);
    const unavailable = await get(router.port, host);
    expect(unavailable.status).toBe(503);
    expect(JSON.parse(unavailable.body).status).toBe(503);
    router.table.setReady('ra', true);
    router.table.setReady('rb', true);
    // A dead upstream in the set: bodiless requests are retried on the other one.
    await driver.stop('ra');
    for (let i = 0; i < 4; i++) expect((await get(router.port, host)).body.startsWith('B:')).toBe(true);
    router.table.set(host, [{ instanceId: 'rb', host: b.host!, port: b.port! }]);
    await driver.stop('rb');
  });

  it('reaps only processes that carry the leftover instance id', async () => {
    const other = new LocalProcessDriver({ logDir: join(dir, 'logs2'), restartBackoffMs: 50 });
    const s = await other.start(spec('left', 'L', { listen: false, command: 'sleep 30' }));
    await driver.reap([{ id: 'someone-else', pid: s.pid }]);
    expect(() => process.kill(s.pid!, 0)).not.toThrow();
    await driver.reap([{ id: 'left', pid: s.pid }]);
    await waitFor(
      'the process to exit',
      () => {
        try {
          process.kill(s.pid!, 0);
          return false;
        } catch {
          return true;
        }
      },
      { timeout: 10_000, every: 20 },
    );
    await other.shutdown();
  });

  it('tunnels upgrade requests (WebSocket) to an instance', async () => {
    writeFileSync(
      join(dir, 'ws.js'),
      `
const http = require('http');
const server = http.createServer((q, s) => s.end('plain'));
server.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n');
  socket.on('data', (d) => socket.write('echo:' + d));
});
server.listen(Number(process.env.PORT), '127.0.0.1');
`,
    );
    const s = await driver.start(spec('ws', 'W', { command: 'node ws.js' }));
    await waitHealthy({ host: s.host!, port: s.port!, path: '/' }, Date.now() + 5000);
    router.table.set('ws.localhost', [{ instanceId: 'ws', host: s.host!, port: s.port! }]);
    const reply = await new Promise<string>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: router.port,
        path: '/',
        headers: { host: 'ws.localhost', connection: 'Upgrade', upgrade: 'echo' },
      });
      req.on('upgrade', (res, socket) => {
        expect(res.statusCode).toBe(101);
        socket.on('data', (d) => {
          resolve(d.toString());
          socket.destroy();
        });
        socket.write('ping');
      });
      req.on('error', reject);
      req.end();
    });
    expect(reply).toBe('echo:ping');
    await driver.stop('ws');
  });
});
