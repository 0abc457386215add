import { mkdirSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { Counter } from 'prom-client';

/**
 * Free space on DATA_DIR's filesystem (issue 37, disk full): what builds, artifacts, instance logs
 * and (embedded) PostgreSQL write to. The operator hears of it before it runs out (a warning
 * line, a gauge, `disk` in /v1/integrations/health), and a write that fails for want of space
 * fails with a clear error and is counted, never corrupting what was there.
 */

export type DiskState = 'ok' | 'low' | 'full' | 'unknown';

export interface DiskSpace {
  state: DiskState;
  freeBytes: number | null;
  totalBytes: number | null;
}

/** Below this a write is about to fail (the space a small build step or a log burst takes). */
const FULL_BELOW_BYTES = 8 * 1024 * 1024;

/** Free space for unprivileged writers (`bavail`), judged against the low-space threshold. */
export async function diskSpace(dataDir: string, lowBelowBytes: number): Promise<DiskSpace> {
  try {
    const s = await statfs(dataDir);
    const freeBytes = s.bavail * s.bsize;
    const state: DiskState = freeBytes < FULL_BELOW_BYTES ? 'full' : freeBytes < lowBelowBytes ? 'low' : 'ok';
    return { state, freeBytes, totalBytes: s.blocks * s.bsize };
  } catch {
    return { state: 'unknown', freeBytes: null, totalBytes: null };
  }
}

/** Whether `err` (a Node error, a PostgreSQL error or a failed command's message) is a full disk. */
export function isDiskFull(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT' || e?.code === '53100') return true;
  return typeof e?.message === 'string' && /no space left on device|disk quota exceeded|could not extend file/i.test(e.message);
}

/**
 * Writes that failed for want of space, by what was written (`build`, `instance_log`, `api`, ...).
 * Process-wide; the metrics module registers it in its registry.
 */
export const diskFullErrors = new Counter({
  name: 'slipway_disk_full_errors_total',
  help: 'Writes that failed because the disk was full (ENOSPC, or PostgreSQL 53100), by what was written',
  labelNames: ['operation'],
  registers: [],
});

export function countDiskFull(operation: string) {
  diskFullErrors.inc({ operation });
}

/**
 * The periodic check: warns once when the state worsens (low, full) and once when it is ok
 * again, so a log watcher sees each change without a line every minute.
 */
export class DiskSpaceMonitor {
  private timer: NodeJS.Timeout | null = null;
  private last: DiskState = 'ok';

  constructor(
    private readonly dataDir: string,
    private readonly lowBelowBytes: number,
    private readonly intervalMs: number,
    private readonly log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void },
  ) {}

  start() {
    mkdirSync(this.dataDir, { recursive: true });
    void this.check();
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async check(): Promise<DiskSpace> {
    const space = await diskSpace(this.dataDir, this.lowBelowBytes);
    const fields = { dataDir: this.dataDir, freeBytes: space.freeBytes, totalBytes: space.totalBytes, lowBelowBytes: this.lowBelowBytes };
    if (space.state === 'low' || space.state === 'full') {
      if (space.state !== this.last)
        this.log.warn(
          fields,
          space.state === 'full'
            ? `DATA_DIR's disk is full: builds and log writes fail until space is freed`
            : `DATA_DIR's disk is low on space (${Math.floor((space.freeBytes ?? 0) / 1048576)} MiB free, warning below ${Math.floor(this.lowBelowBytes / 1048576)} MiB)`,
        );
    } else if (space.state === 'ok' && this.last !== 'ok') this.log.info(fields, "DATA_DIR's disk has space again");
    if (space.state !== 'unknown') this.last = space.state;
    return space;
  }
}
