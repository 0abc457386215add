import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { reportBackgroundFailure, type FailureLogger } from '../observability/background-failures.js';

/** Upper bounds (ms) of the latency histogram's buckets; one more bucket counts the slower ones. */
export const LATENCY_BOUNDS_MS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

/**
 * The latency below which a share `q` (0..1) of the requests fell, read off the histogram: linear
 * within the bucket it lands in (a bucket's requests are taken as spread evenly over it); the
 * open last bucket answers twice the last bound. Null without requests.
 */
export function latencyPercentile(buckets: readonly number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i]!;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const upper = LATENCY_BOUNDS_MS[i] ?? lower * 2;
      return Math.round((lower + ((rank - seen) / n) * (upper - lower)) * 100) / 100;
    }
    seen += n;
  }
  return null;
}

/** Whose requests an upstream serves: the key the edge counts them under. */
export interface RequestOwner {
  applicationId: string;
  environmentId: string;
  processType: string;
}

interface Counts {
  owner: RequestOwner;
  minute: number;
  requests: number;
  classes: number[];
  buckets: number[];
  latencySumMs: number;
}

/**
 * Per-application request counters of one edge process: counted in memory per owner and
 * minute (a request costs a map lookup and a few increments), added to `request_stats` in
 * PostgreSQL every `flushMs`, so the observability endpoint of any process reads them.
 */
export class RequestStats {
  private counts = new Map<string, Counts>();
  private timer: NodeJS.Timeout | null = null;
  private logger: FailureLogger | null = null;

  constructor(
    private readonly db: Db,
    private readonly flushMs = 5000,
  ) {}

  /** Where a failed flush is reported (the edge driver's logger). */
  useLogger(logger: FailureLogger) {
    this.logger = logger;
  }

  static keyOf(owner: RequestOwner): string {
    return `${owner.applicationId}/${owner.environmentId}/${owner.processType}`;
  }

  /** Counts `times` requests (default one) of that status and time: drivers that read totals add them at once. */
  record(key: string, owner: RequestOwner, status: number, elapsedMs: number, times = 1) {
    const c = this.countsOf(key, owner);
    c.requests += times;
    c.classes[Math.min(Math.max(Math.floor(status / 100), 1), 5) - 1]! += times;
    let b = 0;
    while (b < LATENCY_BOUNDS_MS.length && elapsedMs > LATENCY_BOUNDS_MS[b]!) b++;
    c.buckets[b]! += times;
    c.latencySumMs += elapsedMs * times;
  }

  /**
   * Adds totals a driver counted apart (HAProxy: answers by status class from its stats, times by
   * bucket from its own histogram): the requests are the classes' sum, `buckets` as LATENCY_BOUNDS_MS
   * lays them out (the percentiles are read off them alone).
   */
  recordTotals(key: string, owner: RequestOwner, totals: { classes: readonly number[]; buckets: readonly number[]; latencySumMs: number }) {
    const c = this.countsOf(key, owner);
    totals.classes.forEach((n, i) => {
      if (i < c.classes.length) c.classes[i]! += n;
      c.requests += n;
    });
    totals.buckets.forEach((n, i) => {
      if (i < c.buckets.length) c.buckets[i]! += n;
    });
    c.latencySumMs += totals.latencySumMs;
  }

  /** This minute's counters of `key` (a new minute: the finished one is flushed under its own key). */
  private countsOf(key: string, owner: RequestOwner): Counts {
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    let c = this.counts.get(key);
    if (c && c.minute !== minute) {
      this.counts.set(`${key}@${c.minute}`, c);
      c = undefined;
    }
    if (!c) {
      c = {
        owner,
        minute,
        requests: 0,
        classes: [0, 0, 0, 0, 0],
        buckets: new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0),
        latencySumMs: 0,
      };
      this.counts.set(key, c);
    }
    return c;
  }

  start() {
    // A failed flush loses one interval of counters (metrics only); the edge must keep serving requests.
    this.timer ??= setInterval(
      () => void this.flush().catch((err) => reportBackgroundFailure(this.logger, 'request_stats_flush', err)),
      this.flushMs,
    );
    this.timer.unref();
  }

  /** Stops the timer and writes what is counted. */
  async stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // Shutdown: the database may already be closing; the last interval's counters are lost then.
    await this.flush().catch((err) => reportBackgroundFailure(this.logger, 'request_stats_flush', err, { shutdown: true }));
  }

  async flush(): Promise<void> {
    if (this.counts.size === 0) return;
    const batch = [...this.counts.values()];
    this.counts = new Map();
    const rows = batch.map((c) => ({
      application_id: c.owner.applicationId,
      environment_id: c.owner.environmentId,
      process_type: c.owner.processType,
      minute: new Date(c.minute),
      requests: c.requests,
      status_classes: c.classes,
      latency_buckets: c.buckets,
      latency_sum_ms: c.latencySumMs,
    }));
    const add = (column: 'status_classes' | 'latency_buckets') =>
      sql<number[]>`array(select a + b from unnest(request_stats.${sql.ref(column)}, excluded.${sql.ref(column)}) as t(a, b))`;
    await this.db
      .insertInto('request_stats')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['application_id', 'environment_id', 'process_type', 'minute']).doUpdateSet({
          requests: sql`request_stats.requests + excluded.requests`,
          status_classes: add('status_classes'),
          latency_buckets: add('latency_buckets'),
          latency_sum_ms: sql`request_stats.latency_sum_ms + excluded.latency_sum_ms`,
        }),
      )
      .execute();
  }
}

/** How long the edge's counters are kept per minute; older minutes are folded into one total per process type. */
export const REQUEST_STATS_DETAIL_DAYS = 30;
/** The minute the folded totals are kept under: before any window a view or a guard reads. */
const TOTALS_MINUTE = '1970-01-01T00:00:00Z';

/**
 * Folds the per-minute counters older than `days` into one row per application, environment
 * and process type (at the epoch), so the table stops growing while `GET /metrics`, whose
 * counters sum every row and must never go down, keeps the same totals. One statement: the
 * rows deleted are the rows added, whichever process sweeps.
 */
export async function foldOldRequestStats(db: Db, days = REQUEST_STATS_DETAIL_DAYS): Promise<number> {
  const sumOf = (column: 'status_classes' | 'latency_buckets') =>
    sql.raw(`array(SELECT sum(v) FROM old o2, unnest(o2.${column}) WITH ORDINALITY u(v, i)
      WHERE (o2.application_id, o2.environment_id, o2.process_type) = (old.application_id, old.environment_id, old.process_type)
      GROUP BY i ORDER BY i)`);
  const { rows } = await sql<{ folded: string }>`
    WITH old AS (
      DELETE FROM request_stats
      WHERE minute < now() - make_interval(days => ${days}) AND minute > ${TOTALS_MINUTE}::timestamptz
      RETURNING *
    ), totals AS (
      INSERT INTO request_stats AS r (application_id, environment_id, process_type, minute, requests, status_classes, latency_buckets, latency_sum_ms)
      SELECT application_id, environment_id, process_type, ${TOTALS_MINUTE}::timestamptz, sum(requests),
             ${sumOf('status_classes')}, ${sumOf('latency_buckets')}, sum(latency_sum_ms)
      FROM old GROUP BY application_id, environment_id, process_type
      ON CONFLICT (application_id, environment_id, process_type, minute) DO UPDATE SET
        requests = r.requests + excluded.requests,
        status_classes = array(SELECT a + b FROM unnest(r.status_classes, excluded.status_classes) AS t(a, b)),
        latency_buckets = array(SELECT a + b FROM unnest(r.latency_buckets, excluded.latency_buckets) AS t(a, b)),
        latency_sum_ms = r.latency_sum_ms + excluded.latency_sum_ms
    )
    SELECT count(*) AS folded FROM old`.execute(db);
  return Number(rows[0]?.folded ?? 0);
}

/** The edge's counters of an application since `since`, per minute, environment and process type. */
export async function readRequestStats(db: Db, applicationId: string, since: Date) {
  const rows = await db
    .selectFrom('request_stats as r')
    .innerJoin('environments as e', 'e.id', 'r.environment_id')
    .select([
      'r.minute',
      'e.slug as environment',
      'r.process_type',
      'r.requests',
      'r.status_classes',
      'r.latency_buckets',
      'r.latency_sum_ms',
    ])
    .where('r.application_id', '=', applicationId)
    .where('r.minute', '>=', since)
    .orderBy('r.minute')
    .orderBy('e.slug')
    .orderBy('r.process_type')
    .execute();
  return rows.map((r) => {
    const [s1, s2, s3, s4, s5] = r.status_classes.map(Number);
    const requests = Number(r.requests);
    return {
      minute: r.minute.toISOString(),
      environment: r.environment,
      process_type: r.process_type,
      requests,
      status: { '1xx': s1 ?? 0, '2xx': s2 ?? 0, '3xx': s3 ?? 0, '4xx': s4 ?? 0, '5xx': s5 ?? 0 },
      latency: {
        bounds_ms: [...LATENCY_BOUNDS_MS],
        buckets: r.latency_buckets.map(Number),
        mean_ms: requests ? r.latency_sum_ms / requests : 0,
      },
    };
  });
}
