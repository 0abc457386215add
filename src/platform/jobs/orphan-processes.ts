import { readdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';

/** Marks every process a worker starts for a job (git, builds), so a later worker can find them. */
export const WORKER_MARK_VARIABLE = 'SLIPWAY_WORKER';

let currentWorker: string | null = null;

/** The worker this process runs as (set when its workers start); child processes carry it. */
export function setWorkerMark(workerId: string | null): void {
  currentWorker = workerId;
}

/** The environment entry that marks a child process as started by this process's worker. */
export function workerMark(): Record<string, string> {
  return currentWorker ? { [WORKER_MARK_VARIABLE]: currentWorker } : {};
}

/**
 * Kills the processes that dead workers of this machine left running (a build of a worker
 * killed with -9 survives it, in its own process group): those carrying their mark.
 * Returns how many were killed. Linux only (/proc); elsewhere nothing is found.
 */
export async function killOrphansOf(deadWorkerIds: string[]): Promise<number> {
  const prefix = `${hostname()}:`;
  const marks = new Set(
    deadWorkerIds
      .filter((id) => id.startsWith(prefix) && Number(id.slice(prefix.length).split(':')[0]) !== process.pid)
      .map((id) => `${WORKER_MARK_VARIABLE}=${id}`),
  );
  if (marks.size === 0) return 0;
  let killed = 0;
  // No /proc (not Linux): nothing can be found, as documented above.
  const entries = await readdir('/proc').catch(() => [] as string[]);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    // The process ended since readdir, or is not ours to read: not one of our orphans.
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (!environ || !environ.split('\0').some((kv) => marks.has(kv))) continue;
    const pid = Number(entry);
    try {
      process.kill(-pid, 'SIGKILL'); // the group leader: its whole group
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    killed++;
  }
  return killed;
}
