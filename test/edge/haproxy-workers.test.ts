/**
 * Two workers on one machine share a DATA_DIR (docs/operations.md: a build's artifact is read by whichever
 * worker deploys it), each with its own fixed router ports, so each gets the default edge, HAProxy. Each must
 * drive its own HAProxy: with one `DATA_DIR/edge/haproxy` for both, the second worker adopted the first one's
 * master and reloaded it with its own ports, and the first worker's port stopped answering. Real worker
 * processes on a fresh database; HAProxy's directory kept per router port (src/platform/edge/proxy-directory.ts),
 * and a directory of an earlier version (`edge/haproxy`) still used by the process whose port it serves.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findHaproxy } from '../../src/find-binary.js';
import { routerGet } from '../helpers/router-get.js';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { startPlatformProcess, stopAllStarted } from '../scale-out/platform-processes.js';
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
    common = { DATABASE_URL: database.url, SECRET_KEY: randomBytes(32).toString('base64'), DATA_DIR: dataDir };
  });

  afterAll(async () => {
    await stopAllStarted();
    // HAProxy outlives a worker by design: this test's masters end with it.
    if (dataDir && existsSync(join(dataDir, 'edge'))) killMasters(dataDir);
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps one HAProxy per router port, and a directory of an earlier version is used by the port it serves', async () => {
    const ports = [
      [await freePort(), await freePort()],
      [await freePort(), await freePort()],
    ] as const;
    const workerEnv = ([http, https]: readonly [number, number]) => ({
      ...common,
      ROUTER_PORT: String(http),
      ROUTER_HTTPS_PORT: String(https),
    });
    const first = startPlatformProcess('worker', 'worker-1', workerEnv(ports[0]));
    await first.ready;
    const second = startPlatformProcess('worker', 'worker-2', workerEnv(ports[1]));
    await second.ready;
    expect(first.output()).toMatch(/edge: haproxy/);

    // Each port answers with the edge's own 404 for a name it does not serve: both proxies listen.
    for (const [http] of ports) expect((await routerGet(http, 'nobody.localhost')).status).toBe(404);
    const dirs = ports.map(([http]) => join(dataDir, 'edge', `haproxy-${http}`));
    const masters = dirs.map(masterOf);
    expect(masters[0]!.pid).not.toBe(masters[1]!.pid);
    dirs.forEach((dir, i) => {
      expect(masters[i]!.cmdline).toContain(join(dir, 'haproxy.cfg'));
      expect(readFileSync(join(dir, 'haproxy.cfg'), 'utf8')).toMatch(new RegExp(`bind \\S+:${ports[i]![0]}\\b`));
    });

    // The first worker stops (its HAProxy stops with it on SIGTERM, or outlives it: either way it is ended here).
    expect(await first.stop()).toBe(0);
    try {
      process.kill(masters[0]!.pid, 'SIGKILL');
    } catch {
      /* stopped with its worker */
    }
    // As an earlier version left it: the first port's files in `edge/haproxy`. Its next start uses that directory.
    renameSync(dirs[0]!, join(dataDir, 'edge', 'haproxy'));
    const again = startPlatformProcess('worker', 'worker-1-again', workerEnv(ports[0]));
    await again.ready;
    expect(masterOf(join(dataDir, 'edge', 'haproxy')).cmdline).toContain(join(dataDir, 'edge', 'haproxy', 'haproxy.cfg'));
    for (const [http] of ports) expect((await routerGet(http, 'nobody.localhost')).status).toBe(404);
    // The second worker's HAProxy was left alone throughout.
    expect(masterOf(dirs[1]!).pid).toBe(masters[1]!.pid);

    expect(await Promise.all([again.stop(), second.stop()])).toEqual([0, 0]);
  }, 180_000);
});
