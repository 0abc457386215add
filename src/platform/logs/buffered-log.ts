import { storable } from './storable-text.js';

/** Above this a record's log keeps its beginning and says what was dropped (a chatty command cannot fill the database). */
export const MAX_LOG_CHARS = 2 * 1024 * 1024;

/** Where a failed write is reported (pino's and the runtime logger's shape). */
export interface LogWriteFailureLogger {
  warn(obj: object, msg?: string): void;
}

export interface BufferedLogOptions {
  /** Appends text to the record's log column; one call per batch. */
  append: (text: string) => Promise<unknown>;
  /** How long lines gather before a batch is written. */
  flushMs?: number;
  /** Characters kept before the log says it was truncated. */
  maxChars?: number;
  /** Prefix each line (e.g. a timestamp). */
  format?: (line: string) => string;
  logger?: LogWriteFailureLogger;
  /** What the failure log names (e.g. `deployments abc`). */
  label?: string;
  /** Whether something besides text waits for the next write (e.g. a record's current step). */
  hasOtherChanges?: () => boolean;
}

/** Longest wait between retries of a failing write. */
const MAX_RETRY_MS = 30_000;

/**
 * Buffers log lines bound for a database record and appends them in batches, in order, one write
 * at a time. A failed write keeps its text at the front of the buffer, is logged, and is tried
 * again with the next batch: a lost database connection delays lines, it does not drop them.
 */
export class BufferedLog {
  private pending = '';
  private size = 0;
  private truncated = false;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private readonly flushMs: number;
  private readonly maxChars: number;
  private failures = 0;

  constructor(private readonly options: BufferedLogOptions) {
    this.flushMs = options.flushMs ?? 250;
    this.maxChars = options.maxChars ?? MAX_LOG_CHARS;
  }

  /**
   * Buffers a line (NUL and unpaired surrogates replaced: the column is text). Returns false once
   * the log is full, so a producer may stop splitting output nobody will store.
   */
  line(text: string): boolean {
    if (this.truncated) return false;
    const entry = `${storable(this.options.format ? this.options.format(text) : text)}\n`;
    if (this.size + entry.length > this.maxChars) {
      this.pending += `[log truncated at ${this.maxChars} characters]\n`;
      this.truncated = true;
    } else {
      this.pending += entry;
      this.size += entry.length;
    }
    this.schedule();
    return !this.truncated;
  }

  /** Asks for a write soon (for callers that change something else the batch carries). */
  schedule(): void {
    const delay = Math.min(this.flushMs * 2 ** this.failures, MAX_RETRY_MS);
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delay);
    this.timer.unref();
  }

  /**
   * Writes everything buffered; resolves once stored, or once the write failed (the text then
   * stays buffered for the next flush). Never rejects: a log write must not fail a build or deploy.
   */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.chain = this.chain.then(async () => {
      const text = this.pending;
      if (!text && !this.options.hasOtherChanges?.()) return;
      this.pending = '';
      try {
        await this.options.append(text);
        this.failures = 0;
      } catch (err) {
        this.pending = text + this.pending;
        this.failures += 1;
        this.options.logger?.warn(
          { err, log: this.options.label, attempt: this.failures },
          'log write failed; the lines stay buffered and are retried',
        );
        this.schedule();
      }
    });
    return this.chain;
  }

  /** Lines not yet stored. */
  get buffered(): string {
    return this.pending;
  }
}
