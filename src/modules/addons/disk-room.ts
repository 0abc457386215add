import { AppError } from '../../platform/errors.js';
import { diskSpace, isDiskFull } from '../../platform/storage/disk-space.js';

/**
 * Room on DATA_DIR's disk for an add-on's data (issue 31, disk full): a create, a backup or a
 * restore that would not fit is refused before it starts, as the rest of the platform answers a
 * full disk (507, INSUFFICIENT_STORAGE: nothing changed, reads still answer), with what to do.
 */
export class DiskRoom {
  constructor(private readonly dataDir: string) {}

  /** Refuses `what` when DATA_DIR is full, or has less than `neededBytes` free. */
  async require(what: string, neededBytes = 0): Promise<void> {
    const space = await diskSpace(this.dataDir, 0);
    if (space.state === 'full' || (space.freeBytes !== null && space.freeBytes < neededBytes))
      throw this.full(what, space.freeBytes, neededBytes);
  }

  /** Whether a failure was for want of space: its message says so, or the disk is full now. */
  async explains(err: unknown): Promise<boolean> {
    return isDiskFull(err) || (await diskSpace(this.dataDir, 0)).state === 'full';
  }

  full(what: string, freeBytes: number | null = null, neededBytes = 0): AppError {
    const mib = (n: number) => `${Math.ceil(n / (1024 * 1024))} MiB`;
    const figures = freeBytes === null ? '' : ` (${mib(freeBytes)} free${neededBytes > 0 ? `, about ${mib(neededBytes)} needed` : ''})`;
    return new AppError(
      'INSUFFICIENT_STORAGE',
      `The platform's disk is full${figures}: ${what}. Free space on DATA_DIR's disk or grow it ` +
        '(docs/operations.md, "Disk space"), then retry',
    );
  }
}
