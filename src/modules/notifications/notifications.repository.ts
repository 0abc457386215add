import { sql } from 'kysely';
import type { ChannelKind } from './messages.js';
import type { Db } from '../../platform/db/database.js';

/** Columns of a channel that may be shown (never the sealed URL). */
const SHOWN = ['id', 'kind', 'name', 'url_hint', 'events', 'environments', 'created_at'] as const;

export class NotificationsRepository {
  constructor(private readonly db: Db) {}

  insert(values: {
    id: string;
    organization_id: string;
    kind: ChannelKind;
    name: string;
    url_sealed: string;
    url_hint: string;
    events: string[];
    environments: string[] | null;
    created_by: string;
  }) {
    return this.db.insertInto('notification_channels').values(values).returning(SHOWN).executeTakeFirstOrThrow();
  }

  list(organizationId: string) {
    return this.db
      .selectFrom('notification_channels')
      .select(SHOWN)
      .where('organization_id', '=', organizationId)
      .orderBy('created_at')
      .execute();
  }

  find(organizationId: string, id: string) {
    return this.db
      .selectFrom('notification_channels')
      .select([...SHOWN, 'url_sealed'])
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const r = await this.db
      .deleteFrom('notification_channels')
      .where('organization_id', '=', organizationId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** The channels of an organization that take this event (the environment filter is applied by the caller). */
  channelsFor(db: Db, organizationId: string, event: string) {
    return db
      .selectFrom('notification_channels')
      .select(['id', 'kind', 'environments'])
      .where('organization_id', '=', organizationId)
      .where(sql<boolean>`${event} = ANY(events)`)
      .execute();
  }

  insertDelivery(db: Db, values: { id: string; channel_id: string; event: string; payload: string }) {
    return db.insertInto('notification_deliveries').values(values).execute();
  }

  setJob(db: Db, deliveryId: string, jobId: string) {
    return db
      .updateTable('notification_deliveries')
      .set({ job_id: jobId, status: 'pending', updated_at: sql`now()` })
      .where('id', '=', deliveryId)
      .execute();
  }

  async deliveries(channelId: string, limit: number, offset: number) {
    const [rows, count] = await Promise.all([
      this.db
        .selectFrom('notification_deliveries')
        .selectAll()
        .where('channel_id', '=', channelId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      this.db
        .selectFrom('notification_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('channel_id', '=', channelId)
        .executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.n) };
  }

  delivery(channelId: string, id: string) {
    return this.db
      .selectFrom('notification_deliveries')
      .selectAll()
      .where('channel_id', '=', channelId)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async attemptsOf(deliveryIds: string[]) {
    if (deliveryIds.length === 0) return [];
    return this.db.selectFrom('notification_delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('id').execute();
  }

  /** What a delivery job needs: the delivery and its channel's sealed address. */
  forDelivery(deliveryId: string) {
    return this.db
      .selectFrom('notification_deliveries')
      .innerJoin('notification_channels', 'notification_channels.id', 'notification_deliveries.channel_id')
      .select([
        'notification_deliveries.id',
        'notification_deliveries.event',
        'notification_deliveries.payload',
        'notification_channels.kind',
        'notification_channels.url_sealed',
      ])
      .where('notification_deliveries.id', '=', deliveryId)
      .executeTakeFirst();
  }

  recordAttempt(attempt: { delivery_id: string; response_status: number | null; error: string | null; duration_ms: number }) {
    return this.db.insertInto('notification_delivery_attempts').values(attempt).execute();
  }

  setStatus(deliveryId: string, status: 'succeeded' | 'failed') {
    return this.db
      .updateTable('notification_deliveries')
      .set({ status, updated_at: sql`now()` })
      .where('id', '=', deliveryId)
      .execute();
  }

  organizationSlug(db: Db, organizationId: string) {
    return db.selectFrom('organizations').select('slug').where('id', '=', organizationId).executeTakeFirst();
  }

  async environmentSlug(db: Db, environmentId: string): Promise<string | null> {
    const row = await db.selectFrom('environments').select('slug').where('id', '=', environmentId).executeTakeFirst();
    return row?.slug ?? null;
  }

  /** An application event's names: the app, its project and organization (read-only join). */
  applicationNames(db: Db, applicationId: string) {
    return db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
      .select(['applications.slug as app', 'projects.slug as project', 'organizations.slug as organization'])
      .where('applications.id', '=', applicationId)
      .executeTakeFirst();
  }

  /**
   * The event's subject (a deployment, a release or an image, by id): its release version,
   * environment slug, and who asked for it (the audit log's actor of the request that made it).
   */
  async subjectFacts(db: Db, subjectId: string) {
    const { rows } = await sql<{ version: number | null; environment: string | null; who: string | null }>`
      WITH subject AS (
        SELECT r.version, d.environment_id, ARRAY[d.id::text, r.id::text] AS ids
          FROM deployments d JOIN releases r ON r.id = d.release_id WHERE d.id::text = ${subjectId}
        UNION ALL
        SELECT r.version, r.environment_id, ARRAY[r.id::text] FROM releases r WHERE r.id::text = ${subjectId}
        UNION ALL
        SELECT NULL, NULL, ARRAY[i.id::text] FROM images i WHERE i.id::text = ${subjectId}
        LIMIT 1)
      SELECT s.version, e.slug AS environment,
        (SELECT a.actor_username FROM audit_log a WHERE a.resource_id = ANY(s.ids) AND a.actor_username IS NOT NULL
          ORDER BY a.id LIMIT 1) AS who
        FROM subject s LEFT JOIN environments e ON e.id = s.environment_id`.execute(db);
    return rows[0] ?? null;
  }
}
