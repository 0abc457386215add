import { CompiledQuery } from 'kysely';
import type { Db } from '../db/database.js';
import { reportBackgroundFailure } from '../observability/background-failures.js';
import { auditInsert } from './audit-row.js';
import type { RequestAudit } from './request-audit.js';

/** New denial rows per process and minute at most; past it denials are only counted (and warned about). */
const MAX_ROWS_PER_MINUTE = 600;
/**
 * New rows a minute for refusals without a user (by address), all addresses together: an
 * attacker rotating addresses (an IPv6 prefix holds billions) must not spend the budget that
 * records members' refusals. Past it, one row per route counts them all.
 */
const ANONYMOUS_ROWS_PER_MINUTE = 100;
/** New rows a minute per user; past it, that user's refusals on further routes are counted in one row. */
const ROWS_PER_USER_PER_MINUTE = 50;
/** How often the repeats of a denial are added to its row. */
const FLUSH_EVERY_MS = 5000;

interface Aggregate {
  rowId: number | null;
  /** Repeats since the row was written or last updated. */
  pending: number;
}

/**
 * Refused requests (403) in the audit log: who tried which route, on which organization when
 * the route names one. Aggregated so a caller hammering a route cannot flood the log: one row
 * per (actor or address, route) and minute, whose `after.repeated` counts the repeats; at
 * most MAX_ROWS_PER_MINUTE new rows a minute per process, the rest only counted.
 */
export class DeniedRequests {
  private minute = 0;
  private rows = 0;
  private uncounted = 0;
  private anonymousRows = 0;
  private readonly rowsPerUser = new Map<string, number>();
  private aggregates = new Map<string, Aggregate>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly warn: (detail: object, message: string) => void,
  ) {}

  async record(audit: RequestAudit, message: string) {
    const now = Math.floor(Date.now() / 60_000);
    if (now !== this.minute) {
      await this.flush();
      if (this.uncounted > 0) this.warn({ denied: this.uncounted }, 'refused requests past the audit log limit were only counted');
      this.minute = now;
      this.rows = 0;
      this.uncounted = 0;
      this.anonymousRows = 0;
      this.rowsPerUser.clear();
      this.aggregates = new Map();
    }
    const actor = audit.actor;
    const route = `${audit.request.method} ${audit.request.route}`;
    let key = `${actor.userId ?? `address:${audit.request.clientAddress}`}|${route}`;
    /** A row that counts an actor's overflow: bounded by routes (anonymous) or users, so outside the cap. */
    let overflow = false;
    if (!this.aggregates.has(key)) {
      if (!actor.userId && this.anonymousRows >= ANONYMOUS_ROWS_PER_MINUTE) [key, overflow] = [`anonymous|${route}`, true];
      else if (actor.userId && (this.rowsPerUser.get(actor.userId) ?? 0) >= ROWS_PER_USER_PER_MINUTE)
        [key, overflow] = [`${actor.userId}|*`, true];
    }
    const seen = this.aggregates.get(key);
    if (seen) {
      seen.pending++;
      this.timer ??= setTimeout(() => {
        this.timer = null;
        void this.flush().catch((err) => this.warn({ err }, 'counting repeated refusals in the audit log failed'));
      }, FLUSH_EVERY_MS).unref();
      return;
    }
    if (!overflow) {
      if (this.rows >= MAX_ROWS_PER_MINUTE) {
        this.uncounted++;
        return;
      }
      this.rows++;
      if (actor.userId) this.rowsPerUser.set(actor.userId, (this.rowsPerUser.get(actor.userId) ?? 0) + 1);
      else this.anonymousRows++;
    }
    const aggregate: Aggregate = { rowId: null, pending: 0 };
    this.aggregates.set(key, aggregate);
    audit.denied = true;
    Object.assign(audit.change, {
      after: { status: 403, message: message.slice(0, 500), ...(overflow ? { aggregated: actor.userId ? 'routes' : 'addresses' } : {}) },
    });
    const { sql, values } = auditInsert(audit);
    const result = await this.db.executeQuery<{ id: number }>(CompiledQuery.raw(sql, values));
    aggregate.rowId = Number(result.rows[0]!.id);
  }

  /** Adds the repeats counted since the last flush to their rows. */
  async flush() {
    for (const aggregate of this.aggregates.values()) {
      if (aggregate.rowId === null || aggregate.pending === 0) continue;
      const repeated = aggregate.pending;
      aggregate.pending = 0;
      await this.db.executeQuery(
        CompiledQuery.raw(
          `UPDATE audit_log SET after = jsonb_set(after, '{repeated}', to_jsonb(coalesce((after->>'repeated')::int, 0) + $1::int)) WHERE id = $2`,
          [repeated, aggregate.rowId],
        ),
      );
    }
  }

  async close() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // Shutdown: the database may be closing; the repeats counted since the last flush are lost then.
    await this.flush().catch((err) => {
      reportBackgroundFailure({ warn: (fields, message) => this.warn(fields, message) }, 'denied_requests_flush', err);
    });
  }
}
