/**
 * Idle worker loops sleep here between polls; `wakeAll()` (an enqueue or a finished job in
 * this process) ends every sleep at once, so local work starts without waiting a poll.
 */
export class Wakeup {
  private sleepers: (() => void)[] = [];

  wakeAll(): void {
    const waiting = this.sleepers;
    this.sleepers = [];
    for (const wake of waiting) wake();
  }

  /** Waits `ms`, or less when woken. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers = this.sleepers.filter((w) => w !== done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.push(done);
    });
  }
}
