import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { publishWebhookEvent } from '../../platform/webhook-events.js';
import type { PlatformLogger } from '../../platform/wiring.js';

/** Days before a certificate's expiry at which `certificate.expiring` is sent (each once per certificate). */
export const CERTIFICATE_DAYS = [14, 7, 1] as const;
/** Shares of the disk quota (percent) at which `quota.near` is sent (each once per crossing). */
export const QUOTA_PERCENTS = [80, 95] as const;

const DAY_MS = 86_400_000;

/**
 * Watches measures the platform already keeps and publishes an event when one crosses a
 * threshold: certificates close to expiry (the ACME code renews them ACME_RENEW_DAYS before; one
 * still this close means renewal is failing) and organizations' measured disk use near their quota.
 * A crossing is a row inserted once (ON CONFLICT DO NOTHING), so ticks in several processes publish it once.
 */
export class ThresholdWatch {
  constructor(
    private readonly db: Db,
    private readonly defaultQuotaMb: number,
    private readonly log: PlatformLogger,
  ) {}

  /** One subject's check in its own transaction: a failure is logged and leaves the others (another tenant's included). */
  private async alone(subject: string, work: (trx: Db) => Promise<void>): Promise<void> {
    try {
      await this.db.transaction().execute(work);
    } catch (err) {
      this.log.warn({ err, subject }, 'checking a watched threshold failed');
    }
  }

  async check(): Promise<void> {
    await this.certificates();
    await this.quotas();
    await this.db
      .deleteFrom('threshold_crossings')
      .where('subject', 'like', 'certificate:%')
      .where('crossed_at', '<', sql<Date>`now() - interval '90 days'`)
      .execute();
  }

  private async certificates(): Promise<void> {
    const rows = await this.db
      .selectFrom('certificates as c')
      .innerJoin('domains as d', (j) => j.onRef('d.hostname', '=', 'c.hostname').on('d.verified_at', 'is not', null))
      .innerJoin('applications as a', 'a.id', 'd.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select(['p.organization_id', 'a.project_id', 'd.application_id', 'd.environment_id', 'd.hostname', 'c.not_after'])
      .where('c.not_after', '<', sql<Date>`now() + make_interval(days => ${Math.max(...CERTIFICATE_DAYS)})`)
      .execute();
    for (const c of rows) {
      const daysLeft = Math.max(0, Math.floor((c.not_after.getTime() - Date.now()) / DAY_MS));
      const crossed = CERTIFICATE_DAYS.filter((d) => daysLeft < d);
      const subject = `certificate:${c.hostname}:${c.not_after.toISOString()}`;
      await this.alone(subject, async (trx) => {
        if (!(await this.cross(trx, c.organization_id, subject, crossed))) return;
        await publishWebhookEvent(trx, {
          organizationId: c.organization_id,
          projectId: c.project_id,
          event: 'certificate.expiring',
          data: {
            hostname: c.hostname,
            not_after: c.not_after.toISOString(),
            days_left: daysLeft,
            application_id: c.application_id,
            environment_id: c.environment_id,
            message: `The certificate of ${c.hostname} expires ${c.not_after.toISOString()} (${daysLeft} days left) and has not been renewed`,
          },
        });
      });
    }
  }

  private async quotas(): Promise<void> {
    const quotaMb = sql<number>`coalesce(o.disk_quota_mb, ${this.defaultQuotaMb})`;
    const rows = await this.db
      .selectFrom('organization_disk_usage as u')
      .innerJoin('organizations as o', 'o.id', 'u.organization_id')
      .select([
        'o.id as organization_id',
        'o.slug',
        sql<string>`u.artifacts_bytes + u.images_bytes + u.caches_bytes + u.logs_bytes`.as('used'),
        quotaMb.as('quota_mb'),
      ])
      .where(quotaMb, '>', 0)
      .execute();
    for (const q of rows) {
      const quota = q.quota_mb * 1024 * 1024;
      const percent = Math.floor((Number(q.used) / quota) * 100);
      const crossed = QUOTA_PERCENTS.filter((p) => percent >= p);
      await this.alone(`quota:${q.organization_id}`, async (trx) => {
        // Back below a level: its next crossing is told again.
        await trx
          .deleteFrom('threshold_crossings')
          .where('organization_id', '=', q.organization_id)
          .where('subject', '=', 'quota')
          .where('level', '>', percent)
          .execute();
        if (!(await this.cross(trx, q.organization_id, 'quota', crossed))) return;
        await publishWebhookEvent(trx, {
          organizationId: q.organization_id,
          event: 'quota.near',
          data: {
            used_bytes: Number(q.used),
            quota_bytes: quota,
            percent,
            message: `Organization ${q.slug} uses ${percent}% of its disk quota (${Number(q.used)} of ${quota} bytes); new builds are refused at 100%`,
          },
        });
      });
    }
  }

  /** Records the levels crossed; true when one of them is new (the event to publish). */
  private async cross(trx: Db, organizationId: string, subject: string, levels: readonly number[]): Promise<boolean> {
    if (levels.length === 0) return false;
    const rows = await trx
      .insertInto('threshold_crossings')
      .values(levels.map((level) => ({ organization_id: organizationId, subject, level })))
      .onConflict((oc) => oc.doNothing())
      .returning('level')
      .execute();
    return rows.length > 0;
  }
}
