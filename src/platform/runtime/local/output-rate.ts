/** How much output one instance may hand the platform per second; the rest is dropped and counted. */
export interface OutputRate {
  linesPerSecond: number;
  bytesPerSecond: number;
}

export const DEFAULT_OUTPUT_RATE: OutputRate = { linesPerSecond: 1000, bytesPerSecond: 1024 * 1024 };

/**
 * A per-second budget of lines and bytes for one instance (both of its streams together), so a
 * log flood costs the platform a bounded amount of memory and work. Once the budget of the
 * current second is spent, lines are refused (before they are scrubbed or stored) and counted;
 * the next admitted line is preceded by one notice saying how many were dropped.
 */
export class OutputRateGate {
  private windowStart = 0;
  private lines = 0;
  private bytes = 0;
  private droppedLines = 0;
  private droppedBytes = 0;

  constructor(
    private readonly rate: OutputRate,
    /** Writes the notice into the instance's log (not counted against the budget). */
    private readonly notice: (text: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  admit(line: string): boolean {
    const now = this.now();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.lines = 0;
      this.bytes = 0;
      this.report();
    }
    if (this.lines >= this.rate.linesPerSecond || this.bytes + line.length > this.rate.bytesPerSecond) {
      this.droppedLines++;
      this.droppedBytes += line.length + 1;
      return false;
    }
    this.lines++;
    this.bytes += line.length + 1;
    return true;
  }

  /** Says how many lines were dropped since the last notice (at a new second, and when the instance ends). */
  report(): void {
    if (this.droppedLines === 0) return;
    this.notice(
      `[slipway: ${this.droppedLines} lines (${this.droppedBytes} bytes) dropped: output over ${this.rate.linesPerSecond} lines or ${this.rate.bytesPerSecond} bytes per second]`,
    );
    this.droppedLines = 0;
    this.droppedBytes = 0;
  }
}
