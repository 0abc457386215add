import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { serverArgs } from '../helpers/server-program.js';

const ROOT = resolve(import.meta.dirname, '../..');

export type Role = 'api' | 'worker' | 'all';

/** One real server process (API-only or worker-only) and everything it printed. */
export interface PlatformProcess {
  role: Role;
  name: string;
  child: ChildProcess;
  output(): string;
  /** The pino JSON lines it logged (other lines skipped). */
  logLines(): Array<Record<string, unknown>>;
  /** API: its base URL; worker: its worker id. Resolves once it is ready. */
  ready: Promise<string>;
  /** SIGTERM, then the exit code (null: killed by a signal). */
  stop(timeoutMs?: number): Promise<number | null>;
}

const running = new Set<ChildProcess>();

/**
 * Starts the server (`node main.js` of the run's build, test/helpers/server-program.ts) in `role`:
 * signals and the exit code are the server's own. Loopback and port 0 only.
 */
export function startPlatformProcess(role: Role, name: string, env: Record<string, string>): PlatformProcess {
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      HOST: '127.0.0.1',
      PORT: '0',
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: '0',
      LOG_LEVEL: 'info',
      // No stability window: a deployment completes once healthy.
      DEPLOY_STABILITY_WINDOW_SECONDS: '0',
      ...env,
      SLIPWAY_ROLE: role,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  let exited = false;
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const exit = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      exited = true;
      running.delete(child);
      done(code);
    }),
  );

  const ready = new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not become ready:\n${output.slice(-4000)}`)), 60_000);
    const pattern =
      role !== 'worker' ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)/ : /"workerId":"([^"]+)"[^\n]*"msg":"pipeline workers started"/;
    const check = () => {
      const m = pattern.exec(output);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    void exit.then((code) => {
      clearTimeout(timer);
      fail(new Error(`${name} exited with ${code}:\n${output.slice(-4000)}`));
    });
  });
  ready.catch(() => {}); // observed by the caller; no unhandled rejection when it is not awaited

  return {
    role,
    name,
    child,
    ready,
    output: () => output,
    logLines: () =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        }),
    async stop(timeoutMs = 30_000) {
      if (exited || child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exit;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Stops whatever is still running after a failed test: SIGTERM first (a worker then stops
 * the application processes it started), SIGKILL after `graceMs`.
 */
export async function stopAllStarted(graceMs = 15_000): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  running.clear();
}

/** Processes (pids) whose working directory lies under `dir`: application instances started there. */
export function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(dir)) pids.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

/** Ends (SIGKILL) the processes whose working directory lies under `dir`: what a test left running there. */
export function killProcessesUnder(dir: string): void {
  for (const pid of processesUnder(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
