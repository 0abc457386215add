import { hostname } from 'node:os';
import type { JobStore } from './job-store.js';

/**
 * The other workers on record that are dead: stopped, silent for longer than `staleMs`, or
 * on this host with a process that no longer exists (found at once, without waiting out
 * the heartbeat).
 */
export async function deadWorkers(store: JobStore, selfId: string, staleMs: number): Promise<string[]> {
  const myHost = hostname();
  const dead: string[] = [];
  for (const w of await store.listOtherWorkers(selfId)) {
    if (!workerAlive(w, staleMs, myHost)) dead.push(w.id);
  }
  return dead;
}

/** A worker whose heartbeat is older than this is dead (it beats every few seconds). */
export const WORKER_STALE_AFTER_MS = 30_000;

/** Whether a worker's record says it still runs (the opposite of dead, as above). */
export function workerAlive(
  w: { hostname: string; pid: number; heartbeat_at: Date; stopped_at: Date | null },
  staleMs = WORKER_STALE_AFTER_MS,
  myHost = hostname(),
): boolean {
  const stale = Date.now() - w.heartbeat_at.getTime() > staleMs;
  const goneHere = w.hostname === myHost && w.pid !== process.pid && !processExists(w.pid);
  return !(w.stopped_at || stale || goneHere);
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
