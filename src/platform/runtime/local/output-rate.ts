/** How much output one instance may hand the platform per second; the rest is dropped and counted. */
export interface OutputRate {
  linesPerSecond: number;
  bytesPerSecond: number;
}

export const DEFAULT_OUTPUT_RATE: OutputRate = { linesPerSecond: 5000, bytesPerSecond: 2 * 1024 * 1024 };

/**
 * A per-second budget of lines and bytes for one instance (both of its streams together), so a
 * log flood costs the platform a bounded amount of memory and work. Once the budget of the
 * current second is spent the gate is closed: lines are refused before they are scrubbed or
 * stored (whole chunks, unsplit: see `closed`) and counted, and at the end of the second one
 * notice says how many were dropped.
 */
export class OutputRateGate {
  private windowStart = 0;
  private lines = 0;
  private bytes = 0;
  private droppedLines = 0;
  private droppedBytes = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly rate: OutputRate,
    /** Writes the notice into the instance's log (not counted against the budget). */
    private readonly notice: (text: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  private roll() {
    const now = this.now();
    if (now - this.windowStart < 1000) return;
    this.windowStart = now;
    this.lines = 0;
    this.bytes = 0;
    this.report();
  }

  /** Whether this second's budget is spent (a caller may then drop a whole chunk via `drop`). */
  closed(): boolean {
    this.roll();
    return this.lines >= this.rate.linesPerSecond || this.bytes >= this.rate.bytesPerSecond;
  }

  /** `continuing`: a piece of a line whose first piece was admitted (refused, it is no line lost). */
  admit(line: string, continuing = false): boolean {
    this.roll();
    if (this.lines >= this.rate.linesPerSecond || this.bytes + line.length > this.rate.bytesPerSecond) {
      this.drop(continuing ? 0 : 1, line.length + 1);
      return false;
    }
    this.lines++;
    this.bytes += line.length + 1;
    return true;
  }

  /** Counts output dropped unread; the notice comes at the end of the second. */
  drop(lines: number, bytes: number): void {
    this.droppedLines += lines;
    this.droppedBytes += bytes;
    this.noticeAtWindowEnd();
  }

  private noticeAtWindowEnd() {
    this.timer ??= setTimeout(
      () => {
        this.timer = null;
        this.roll();
        // A timer may fire a millisecond before the second ends by this clock (about one in eight
        // do): the window is still open, and without another look its count waited for the next output.
        if (this.droppedLines > 0) this.noticeAtWindowEnd();
      },
      Math.max(1, 1000 - (this.now() - this.windowStart)),
    );
    this.timer.unref();
  }

  /** Says how many lines were dropped since the last notice. */
  report(): void {
    if (this.droppedLines === 0) return;
    this.notice(
      `[slipway: ${this.droppedLines} lines (${this.droppedBytes} bytes) dropped: output over ${this.rate.linesPerSecond} lines or ${this.rate.bytesPerSecond} bytes per second]`,
    );
    this.droppedLines = 0;
    this.droppedBytes = 0;
  }

  /** The instance ended: the last count is reported now. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.report();
  }
}
