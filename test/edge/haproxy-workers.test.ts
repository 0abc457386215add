/**
 * Two workers on one machine share a DATA_DIR (docs/operations.md: a build's artifact is read by whichever
 * worker deploys it), each with its own fixed router ports, so each gets the default edge, HAProxy. Each must
 * drive its own HAProxy: with one `DATA_DIR/edge/haproxy` for both, the second worker adopted the first one's
 * master and reloaded it with its own ports, and the first worker's port stopped answering. Real worker
 * processes on a fresh database (src/platform/edge/proxy-directory.ts): a directory per router port; a worker
 * back with a changed port adopts and moves its proxy; a proxy an earlier version left in `edge/haproxy` is
 * adopted by the worker of its port; a port another live worker's proxy holds is refused.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findHaproxy } from '../../src/find-binary.js';
import { routerGet } from '../helpers/router-get.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { startPlatformProcess, stopAllStarted, type PlatformProcess } from '../scale-out/platform-processes.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from './acme-pebble.js';

const haproxy = findHaproxy();

/** Ends the HAProxy masters whose pid files are under `dataDir/edge` (a master outlives its worker by design). */
function killMasters(dataDir: string) {
  for (const dir of readdirSync(join(dataDir, 'edge'), { withFileTypes: true }))
    try {
      if (dir.isDirectory()) process.kill(Number(readFileSync(join(dataDir, 'edge', dir.name, 'haproxy.pid'), 'utf8').trim()), 'SIGKILL');
    } catch {
      /* none, or gone */
    }
}

/** Waits until the edge on `port` answers (its own 404 for a name it does not serve). */
const edgeAnswers = (port: number, what: string) =>
  waitFor(what, async () => ((await routerGet(port, 'nobody.localhost').catch(() => null))?.status === 404 ? true : null), 10_000, 50);

/** The live HAProxy master whose pid file is in `dir`, with its command line. */
function masterOf(dir: string): { pid: number; cmdline: string } {
  const pid = Number(readFileSync(join(dir, 'haproxy.pid'), 'utf8').trim());
  return { pid, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ') };
}

describe.skipIf(!haproxy)('two workers sharing a DATA_DIR each drive their own HAProxy', () => {
  let database: ScratchDatabase;
  let dataDir: string;
  let common: Record<string, string>;

  beforeAll(async () => {
    database = await createScratchDatabase(inject('postgresAdminUrl'), `edge_workers_${randomBytes(4).toString('hex')}`, {
      ownerUrl: inject('postgresOwnerUrl'),
    });
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-workers-'));
    common = {
      DATABASE_URL: database.url,
      SECRET_KEY: randomBytes(32).toString('base64'),
      DATA_DIR: dataDir,
      // A stop waits at most this long for HAProxy's old workers (30 s by default: the stop's own limit below).
      ROUTER_DRAIN_TIMEOUT_MS: '1000',
      RUNTIME_STOP_GRACE_MS: '2000',
    };
  });

  afterAll(async () => {
    await stopAllStarted();
    // HAProxy outlives a worker by design: this test's masters end with it.
    if (dataDir && existsSync(join(dataDir, 'edge'))) killMasters(dataDir);
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps one HAProxy per router port; a changed port moves its proxy; a port of another live worker is refused', async () => {
    const [a1, a2, b1, b2, c1, a3] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const workerEnv = (http: number, https: number) => ({ ...common, ROUTER_PORT: String(http), ROUTER_HTTPS_PORT: String(https) });
    /** Stops a worker the way an upgrade does (SIGUSR2): its HAProxy goes on serving. */
    const stopKeepingTheEdge = async (worker: PlatformProcess) => {
      worker.child.kill('SIGUSR2');
      await waitFor(`${worker.name} stopped`, async () => (worker.child.exitCode !== null ? true : null), 30_000, 50);
    };
    const first = startPlatformProcess('worker', 'worker-1', workerEnv(a1, a2));
    await first.ready;
    const second = startPlatformProcess('worker', 'worker-2', workerEnv(b1, b2));
    await second.ready;
    expect(first.output()).toMatch(/edge: haproxy/);

    // Each port answers with the edge's own 404 for a name it does not serve: both proxies listen.
    for (const port of [a1, b1]) expect((await routerGet(port, 'nobody.localhost')).status).toBe(404);
    const dirA = join(dataDir, 'edge', `haproxy-${a1}`);
    const dirB = join(dataDir, 'edge', `haproxy-${b1}`);
    const [masterA, masterB] = [masterOf(dirA), masterOf(dirB)];
    expect(masterA.pid).not.toBe(masterB.pid);
    expect(masterA.cmdline).toContain(join(dirA, 'haproxy.cfg'));
    expect(masterB.cmdline).toContain(join(dirB, 'haproxy.cfg'));

    // A third worker given the first one's HTTPS port is refused, saying why; the first one's proxy is left alone.
    const clash = startPlatformProcess('worker', 'worker-3', workerEnv(c1, a2));
    await expect(clash.ready).rejects.toThrow(/needs router ports of its own/);
    expect(masterOf(dirA).pid).toBe(masterA.pid);
    expect((await routerGet(a1, 'nobody.localhost')).status).toBe(404);

    // The first worker stops as for an upgrade and comes back with another HTTP port (same HTTPS port): it adopts
    // its proxy and moves it, so no second proxy binds the HTTPS port beside it (HAProxy's SO_REUSEPORT would share it).
    await stopKeepingTheEdge(first);
    expect((await routerGet(a1, 'nobody.localhost')).status).toBe(404); // still serving without its control plane
    const moved = startPlatformProcess('worker', 'worker-1-moved', workerEnv(a3, a2));
    await moved.ready;
    await edgeAnswers(a3, 'the proxy moved to the new port');
    expect(masterOf(dirA).pid).toBe(masterA.pid);
    await expect(routerGet(a1, 'nobody.localhost')).rejects.toThrow(/ECONNREFUSED/);
    expect(existsSync(join(dataDir, 'edge', `haproxy-${a3}`))).toBe(false);

    // As an earlier version left it: a master running on `edge/haproxy`. The worker of its port adopts it.
    await stopKeepingTheEdge(moved);
    process.kill(masterA.pid, 'SIGKILL');
    const legacy = join(dataDir, 'edge', 'haproxy');
    mkdirSync(legacy, { mode: 0o700 });
    copyFileSync(join(dirA, 'haproxy.cfg'), join(legacy, 'haproxy.cfg'));
    const cfg = join(legacy, 'haproxy.cfg');
    execFileSync(haproxy!, ['-W', '-D', '-f', cfg, '-p', join(legacy, 'haproxy.pid'), '-S', `${join(legacy, 'master.sock')},mode,600`]);
    const legacyMaster = await waitFor(
      "the earlier version's master",
      async () => (existsSync(join(legacy, 'haproxy.pid')) ? masterOf(legacy) : null),
      10_000,
      20,
    );
    const again = startPlatformProcess('worker', 'worker-1-upgraded', workerEnv(a3, a2));
    await again.ready;
    expect(masterOf(legacy).pid).toBe(legacyMaster.pid);
    expect(again.output()).not.toMatch(/no Slipway process drives it/);
    await edgeAnswers(a3, 'the adopted proxy serving');

    // The second worker's HAProxy was left alone throughout.
    expect(masterOf(dirB).pid).toBe(masterB.pid);
    expect(await Promise.all([again.stop(), second.stop()])).toEqual([0, 0]);
  }, 240_000);
});
