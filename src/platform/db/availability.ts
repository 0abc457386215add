/** How long a client should wait before retrying while the database is unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Node's socket errors and PostgreSQL's connection-class codes (08xxx, 57P01-03: shutting down, cannot connect now). */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
]);
const CONNECTION_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /Client was closed and is not queryable/i,
  /connect ECONNREFUSED/i,
];

/**
 * True when the error says the database cannot be reached (not that a query was wrong): `pg`
 * reports these as socket errors (an AggregateError when several addresses were tried),
 * PostgreSQL as a connection-class SQLSTATE, or as a bare "Connection terminated" message.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && (CONNECTION_CODES.has(e.code) || e.code.startsWith('08'))) return true;
  // The embedded server's unix socket is gone while it is stopped.
  if (e.code === 'ENOENT' && (e as { syscall?: unknown }).syscall === 'connect') return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.some((re) => re.test(e.message as string))) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}

/** First wait between two probes of a database that went away; doubles up to the maximum. */
const FIRST_PROBE_MS = 250;
const MAX_PROBE_MS = 5000;

type AvailabilityListener = (up: boolean, cause: unknown) => void;

/**
 * Whether this process can reach its database, as its connections last saw it. A lost
 * connection (an error event on any client, a failed connect) marks it down; from then a probe
 * (`select 1`, with backoff) runs until one answers, which marks it up again. Background work
 * (the job workers) waits on it instead of failing in a loop; requests do not: each one tries
 * and, if the database is still away, answers 503 (http/error-handler.ts).
 */
export class DatabaseAvailability {
  private up = true;
  private backAt = 0;
  private probeTimer: NodeJS.Timeout | null = null;
  private probeDelay = FIRST_PROBE_MS;
  private closed = false;
  private readonly listeners = new Set<AvailabilityListener>();
  private waiters: Array<() => void> = [];

  constructor(private readonly probe: () => Promise<unknown>) {}

  get isUp(): boolean {
    return this.up;
  }

  /** When the database last came back after an outage (epoch ms; 0 when it never went away). */
  get upSince(): number {
    return this.backAt;
  }

  /** Called with `(up, cause)` on every change; returns the unsubscribe. */
  onChange(listener: AvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Reports an error seen on a connection: marks the database down when it says it cannot be reached. */
  report(err: unknown): void {
    if (isDatabaseUnavailable(err)) this.markDown(err);
  }

  markDown(cause: unknown): void {
    if (this.closed) return;
    if (this.up) {
      this.up = false;
      this.probeDelay = FIRST_PROBE_MS;
      this.emit(false, cause);
    }
    this.scheduleProbe();
  }

  /** A query answered: the database is back (wakes whoever waits for it). */
  markUp(): void {
    if (this.up || this.closed) return;
    this.up = true;
    this.backAt = Date.now();
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
    this.emit(true, null);
  }

  /** Resolves once the database is up (at once when it is), or when `signal` aborts. */
  whenUp(signal?: AbortSignal): Promise<void> {
    if (this.up || this.closed || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  close(): void {
    this.closed = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
    for (const waiter of [...this.waiters]) waiter();
  }

  private emit(up: boolean, cause: unknown) {
    if (up) for (const waiter of [...this.waiters]) waiter();
    for (const listener of [...this.listeners]) {
      try {
        listener(up, cause);
      } catch {
        // A listener's failure must not stop the others from hearing the change.
      }
    }
  }

  private scheduleProbe() {
    if (this.probeTimer || this.up || this.closed) return;
    this.probeTimer = setTimeout(() => {
      this.probe().then(
        () => {
          this.probeTimer = null;
          this.markUp();
        },
        () => {
          this.probeTimer = null;
          this.probeDelay = Math.min(this.probeDelay * 2, MAX_PROBE_MS);
          this.scheduleProbe();
        },
      );
    }, this.probeDelay);
    this.probeTimer.unref();
  }
}
