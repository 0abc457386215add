import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How often a process looks at whether it is idle. */
const CHECK_MS = 10_000;
/** Idle: the event loop busy less than this share of the last window. */
const IDLE_UTILIZATION = 0.02;
/** A young generation larger than this at rest is start-up's or the last burst's, not the process's need. */
const YOUNG_GENERATION_AT_REST_BYTES = 4 * 1024 * 1024;

/**
 * Gives the young generation back once a process is at rest. V8 grows it to 2 × 16 MiB under a
 * burst of allocation (start-up's module loading and migrations, a busy minute) and shrinks it only
 * at a full collection made while little is being allocated, which its memory reducer did not
 * schedule here: the control plane and the edge each kept 32 MiB of empty young generation at rest,
 * a third of their memory. Every 10 s, a process whose event loop was nearly idle over the window
 * and whose young generation is still grown runs one full collection, after which V8 shrinks it
 * (tens of milliseconds, at a moment nothing waits). A busy process is left alone: its young
 * generation is what keeps its requests fast. A collection that did not shrink it is not repeated
 * until the process has been busy again. The timer never keeps the process alive.
 */
export function shrinkHeapWhenIdle(): void {
  const collect = exposedGc();
  let last = performance.eventLoopUtilization();
  let tried = false;
  setInterval(() => {
    const now = performance.eventLoopUtilization();
    const idle = performance.eventLoopUtilization(now, last).utilization < IDLE_UTILIZATION;
    last = now;
    if (!idle) tried = false;
    else if (!tried && youngGenerationBytes() > YOUNG_GENERATION_AT_REST_BYTES) {
      collect();
      tried = youngGenerationBytes() > YOUNG_GENERATION_AT_REST_BYTES;
    }
  }, CHECK_MS).unref();
}

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/** V8's `gc()` without starting node with --expose-gc (the platform may be started as plain `node dist/main.js`). */
function exposedGc(): () => void {
  const global = globalThis as { gc?: () => void };
  if (typeof global.gc === 'function') return global.gc;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
