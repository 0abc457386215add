import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * What the drivers of proxies that run as their own daemons (nginx, HAProxy) share: running the
 * binary with a bounded error, reading /proc, and stopping the master gracefully.
 */

const OUTPUT_TAIL_BYTES = 2048;
const STOP_TIMEOUT_MS = 15_000;

/** Runs the proxy's binary (a check, a start); a failure carries the tail of what it said. */
export function runDaemonCommand(binary: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      args,
      { timeout: 30_000, maxBuffer: 64 * 1024, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
      (err, _out, stderr) => {
        if (err) reject(new Error(String(stderr).trim().slice(-OUTPUT_TAIL_BYTES) || err.message));
        else resolve();
      },
    );
  });
}

/** A /proc file's text, or '' when the process is gone. */
export function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** A process that runs (a zombie nobody reaped yet has stopped serving). */
export function alive(pid: number): boolean {
  const stat = readProc(`/proc/${pid}/stat`);
  return stat !== '' && !/^\d+ \(.*\) Z/.test(stat);
}

export function signal(pid: number, name: NodeJS.Signals) {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

/** Sends the proxy's graceful stop signal (requests in flight finish), then SIGTERM past the timeout. */
export async function stopGracefully(master: number, graceful: NodeJS.Signals): Promise<void> {
  signal(master, graceful);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (alive(master)) {
    if (Date.now() > deadline) {
      signal(master, 'SIGTERM');
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
