import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { LogDrainKind, LogDrainSource } from '../../platform/db/schema.js';

/** Columns of a drain that may be shown (never the sealed address or secret). */
const SHOWN = [
  'log_drains.id',
  'log_drains.kind',
  'log_drains.name',
  'log_drains.url_hint',
  'log_drains.application_id',
  'log_drains.sources',
  'log_drains.lines_sent',
  'log_drains.lines_dropped',
  'log_drains.failed_sends',
  'log_drains.last_error',
  'log_drains.last_error_at',
  'log_drains.last_sent_at',
  'log_drains.created_at',
] as const;

export class LogDrainsRepository {
  constructor(private readonly db: Db) {}

  /** An application of the organization by its project and application slugs. */
  applicationBySlugs(organizationId: string, project: string, app: string) {
    return this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .select('applications.id')
      .where('projects.organization_id', '=', organizationId)
      .where('projects.slug', '=', project)
      .where('applications.slug', '=', app)
      .executeTakeFirst();
  }

  async insert(values: {
    id: string;
    organization_id: string;
    application_id: string | null;
    kind: LogDrainKind;
    name: string;
    url_sealed: string;
    url_hint: string;
    secret_sealed: string | null;
    ca_pem: string | null;
    sources: LogDrainSource[];
    created_by: string;
  }) {
    await this.db.insertInto('log_drains').values(values).execute();
    return (await this.find(values.organization_id, values.id))!;
  }

  private shown() {
    return this.db
      .selectFrom('log_drains')
      .leftJoin('applications', 'applications.id', 'log_drains.application_id')
      .leftJoin('projects', 'projects.id', 'applications.project_id')
      .select(SHOWN)
      .select(sql<string | null>`projects.slug || '/' || applications.slug`.as('application'));
  }

  list(organizationId: string) {
    return this.shown().where('log_drains.organization_id', '=', organizationId).orderBy('log_drains.created_at').execute();
  }

  find(organizationId: string, id: string) {
    return this.shown().where('log_drains.organization_id', '=', organizationId).where('log_drains.id', '=', id).executeTakeFirst();
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('log_drains').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Every drain, with what a shipper needs to send (sealed). */
  all() {
    return this.db
      .selectFrom('log_drains')
      .select(['id', 'organization_id', 'application_id', 'kind', 'url_sealed', 'secret_sealed', 'ca_pem', 'sources'])
      .execute();
  }

  addCounts(id: string, delta: { sent: number; dropped: number; failed: number; lastError: string | null; sentAt: Date | null }) {
    return this.db
      .updateTable('log_drains')
      .set({
        lines_sent: sql`lines_sent + ${delta.sent}`,
        lines_dropped: sql`lines_dropped + ${delta.dropped}`,
        failed_sends: sql`failed_sends + ${delta.failed}`,
        ...(delta.lastError ? { last_error: delta.lastError, last_error_at: sql`now()` } : {}),
        ...(delta.sentAt ? { last_sent_at: delta.sentAt } : {}),
      })
      .where('id', '=', id)
      .execute();
  }

  /** An application's names and organization (read-only join). */
  applicationNames(applicationId: string) {
    return this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
      .select([
        'organizations.id as organizationId',
        'organizations.slug as organization',
        'projects.slug as project',
        'applications.slug as app',
      ])
      .where('applications.id', '=', applicationId)
      .executeTakeFirst();
  }

  async environmentSlug(environmentId: string): Promise<string | null> {
    const row = await this.db.selectFrom('environments').select('slug').where('id', '=', environmentId).executeTakeFirst();
    return row?.slug ?? null;
  }

  instanceFacts(instanceId: string) {
    return this.db
      .selectFrom('instances')
      .leftJoin('releases', 'releases.id', 'instances.release_id')
      .select(['instances.process_type', 'instances.ordinal', 'releases.version'])
      .where('instances.id', '=', instanceId)
      .executeTakeFirst();
  }

  /** A build's, release's or deployment's application, environment and release number. */
  async recordFacts(
    table: 'images' | 'releases' | 'deployments',
    id: string,
  ): Promise<{ applicationId: string; environment: string | null; release: number | null } | undefined> {
    if (table === 'images') {
      const row = await this.db.selectFrom('images').select('application_id').where('id', '=', id).executeTakeFirst();
      return row && { applicationId: row.application_id, environment: null, release: null };
    }
    const row =
      table === 'releases'
        ? await this.db
            .selectFrom('releases')
            .innerJoin('environments', 'environments.id', 'releases.environment_id')
            .select(['releases.application_id', 'environments.slug', 'releases.version'])
            .where('releases.id', '=', id)
            .executeTakeFirst()
        : await this.db
            .selectFrom('deployments')
            .innerJoin('releases', 'releases.id', 'deployments.release_id')
            .innerJoin('environments', 'environments.id', 'deployments.environment_id')
            .select(['deployments.application_id', 'environments.slug', 'releases.version'])
            .where('deployments.id', '=', id)
            .executeTakeFirst();
    return row && { applicationId: row.application_id, environment: row.slug, release: row.version };
  }
}
