/**
 * A stop asked for while the platform still starts (systemd stopping a unit that just started, a
 * test or an operator signalling as soon as the workers say they run) waits for the start, then
 * stops what it started and exits 0. Before, a signal in that window met no handler of ours: the
 * process hung (SIGTERM) or died by the signal (SIGUSR2).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../helpers/scratch-database.js';
import { killProcessesUnder, startPlatformProcess, stopAllStarted } from '../scale-out/platform-processes.js';

let database: ScratchDatabase;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createScratchDatabase(inject('postgresAdminUrl'), `signal_${randomBytes(5).toString('hex')}`, {
    ownerUrl: inject('postgresOwnerUrl'),
  });
  dataDir = mkdtempSync(join(tmpdir(), 'slipway-signal-'));
  env = { DATABASE_URL: database.url, DATA_DIR: dataDir, SECRET_KEY: randomBytes(32).toString('base64'), EDGE_DRIVER: 'builtin' };
});

afterAll(async () => {
  await stopAllStarted();
  // What SIGUSR2 leaves serving (the edge process): ours to end.
  if (dataDir) killProcessesUnder(dataDir);
  await database?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('a signal while the platform starts', () => {
  for (const signal of ['SIGTERM', 'SIGUSR2'] as const) {
    it(`${signal} as soon as the runtime has started: the start completes, then the stop, exit 0`, async () => {
      const platform = startPlatformProcess('all', `signalled-${signal}`, env);
      platform.ready.catch(() => {});
      // The runtime logs early in the start: the job workers and the API are still to start.
      await new Promise<void>((resolve) => {
        const check = () => /"component":"runtime"/.test(platform.output()) && resolve();
        platform.child.stdout!.on('data', check);
        platform.child.stderr!.on('data', check);
      });
      platform.child.kill(signal);
      const code = await new Promise<number | null>((resolve) => platform.child.once('exit', (c) => resolve(c)));
      expect(code, platform.output().slice(-2000)).toBe(0);
      expect(platform.logLines().some((l) => l.msg === 'stopping' && l.signal === signal)).toBe(true);
    }, 90_000);
  }
});
