import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { UidSource } from './sandbox.js';

export interface UidRange {
  first: number;
  last: number;
}

/** Parses `SANDBOX_UID_RANGE` (`first-last`); never includes root or the usual system and login users. */
export function parseUidRange(text: string): UidRange {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (!m || first < 10_000 || last < first || last > 2 ** 31 - 2) {
    throw new Error(`SANDBOX_UID_RANGE must be "first-last" with 10000 <= first <= last (got "${text}")`);
  }
  return { first, last };
}

/**
 * One uid per application, kept in `sandbox_uids` so every worker process agrees and an
 * application keeps its uid (its files stay its own) across restarts. The lowest free uid
 * of the range is taken; a deleted application's uid becomes free again.
 */
export class DatabaseUids implements UidSource {
  private readonly known = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly range: UidRange,
  ) {}

  uidFor(applicationId: string): Promise<number> {
    return this.uidOf('application_id', applicationId);
  }

  /** An add-on's own user (its database server runs as nobody else). */
  uidForAddon(addonId: string): Promise<number> {
    return this.uidOf('addon_id', addonId);
  }

  private async uidOf(owner: 'application_id' | 'addon_id', applicationId: string): Promise<number> {
    const cached = this.known.get(applicationId);
    if (cached !== undefined) return cached;
    for (let attempt = 0; attempt < 10; attempt++) {
      const existing = await this.db.selectFrom('sandbox_uids').select('uid').where(owner, '=', applicationId).executeTakeFirst();
      if (existing) {
        this.known.set(applicationId, existing.uid);
        return existing.uid;
      }
      // Another worker may take the same uid at the same moment: the unique key decides, we retry.
      await sql`
        INSERT INTO sandbox_uids (${sql.ref(owner)}, uid)
        SELECT ${applicationId}, candidate FROM generate_series(${this.range.first}::int, ${this.range.last}::int) AS candidate
        WHERE NOT EXISTS (SELECT 1 FROM sandbox_uids WHERE uid = candidate)
        ORDER BY candidate LIMIT 1
        ON CONFLICT DO NOTHING`.execute(this.db);
      const free = await this.db.selectFrom('sandbox_uids').select('uid').where(owner, '=', applicationId).executeTakeFirst();
      if (free) {
        this.known.set(applicationId, free.uid);
        return free.uid;
      }
      const used = await this.db
        .selectFrom('sandbox_uids')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      if (Number(used.n) > this.range.last - this.range.first)
        throw new Error(`every uid of SANDBOX_UID_RANGE (${this.range.first}-${this.range.last}) is taken`);
    }
    throw new Error('could not allocate a sandbox uid (too much contention)');
  }
}
