import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export interface UsageBytes {
  artifacts: number;
  images: number;
  caches: number;
  logs: number;
}

/** The storage module's table (organization_disk_usage) and the read-only joins its measures need. */
export class StorageRepository {
  constructor(private readonly db: Db) {}

  organizationIds() {
    return this.db
      .selectFrom('organizations')
      .select('id')
      .execute()
      .then((rows) => rows.map((r) => r.id));
  }

  /** The organization of an application with its own disk quota (null: the default). */
  organization(organizationId: string) {
    return this.db.selectFrom('organizations').select(['id', 'slug', 'disk_quota_mb']).where('id', '=', organizationId).executeTakeFirst();
  }

  organizationOfApplication(applicationId: string) {
    return this.db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .select(['o.id', 'o.slug', 'o.disk_quota_mb'])
      .where('a.id', '=', applicationId)
      .executeTakeFirst();
  }

  applicationIds(organizationId: string) {
    return this.db
      .selectFrom('applications as a')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select('a.id')
      .where('p.organization_id', '=', organizationId)
      .execute()
      .then((rows) => rows.map((r) => r.id));
  }

  /** Bytes of the organization's logs kept in the database: application output and build/release/deploy logs. */
  async logBytes(organizationId: string): Promise<number> {
    const apps = sql`(SELECT a.id FROM applications a JOIN projects p ON p.id = a.project_id WHERE p.organization_id = ${organizationId})`;
    const { rows } = await sql<{ n: string | null }>`
      SELECT (SELECT coalesce(sum(octet_length(line)), 0) FROM app_log_lines WHERE application_id IN ${apps})
           + (SELECT coalesce(sum(octet_length(log_text)), 0) FROM images WHERE application_id IN ${apps})
           + (SELECT coalesce(sum(octet_length(log_text)), 0) FROM releases WHERE application_id IN ${apps})
           + (SELECT coalesce(sum(octet_length(deploy_log)), 0) FROM deployments WHERE application_id IN ${apps}) AS n`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }

  /** When the organization's latest build ended (a measure older than that is stale). */
  async lastBuildFinished(organizationId: string): Promise<Date | null> {
    const row = await this.db
      .selectFrom('images as i')
      .innerJoin('applications as a', 'a.id', 'i.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select((eb) => eb.fn.max('i.finished_at').as('at'))
      .where('p.organization_id', '=', organizationId)
      .executeTakeFirst();
    return (row?.at as Date | null | undefined) ?? null;
  }

  usage(organizationId: string) {
    return this.db.selectFrom('organization_disk_usage').selectAll().where('organization_id', '=', organizationId).executeTakeFirst();
  }

  /** What the organization's volumes hold at most (their sizes: a tenant may fill them), in bytes. */
  async volumeBytes(organizationId: string): Promise<number> {
    const row = await this.db
      .selectFrom('volumes')
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size_mib'), eb.lit(0)).as('mib'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
    return Number(row?.mib ?? 0) * 1024 * 1024;
  }

  async saveUsage(organizationId: string, bytes: UsageBytes, measuredAt: Date): Promise<void> {
    const values = {
      artifacts_bytes: bytes.artifacts,
      images_bytes: bytes.images,
      caches_bytes: bytes.caches,
      logs_bytes: bytes.logs,
      measured_at: measuredAt,
    };
    await this.db
      .insertInto('organization_disk_usage')
      .values({ organization_id: organizationId, ...values })
      .onConflict((oc) => oc.column('organization_id').doUpdateSet(values))
      .execute();
  }
}
