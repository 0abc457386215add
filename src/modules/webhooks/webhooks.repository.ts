import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export class WebhooksRepository {
  constructor(private readonly db: Db) {}

  /** The organization's project by slug (the webhook's optional scope). */
  projectBySlug(organizationId: string, slug: string) {
    return this.db
      .selectFrom('projects')
      .select(['id', 'slug'])
      .where('organization_id', '=', organizationId)
      .where('slug', '=', slug)
      .executeTakeFirst();
  }

  insert(values: {
    id: string;
    organization_id: string;
    project_id: string | null;
    url: string;
    events: string[];
    secret_sealed: string;
    created_by: string;
  }) {
    return this.db.insertInto('webhooks').values(values).returning(['id', 'created_at']).executeTakeFirstOrThrow();
  }

  list(organizationId: string) {
    return this.db
      .selectFrom('webhooks')
      .leftJoin('projects', 'projects.id', 'webhooks.project_id')
      .select(['webhooks.id', 'webhooks.url', 'webhooks.events', 'webhooks.created_at', 'projects.slug as project'])
      .where('webhooks.organization_id', '=', organizationId)
      .orderBy('webhooks.created_at')
      .execute();
  }

  find(organizationId: string, id: string) {
    return this.db
      .selectFrom('webhooks')
      .leftJoin('projects', 'projects.id', 'webhooks.project_id')
      .select(['webhooks.id', 'webhooks.url', 'webhooks.events', 'webhooks.created_at', 'projects.slug as project'])
      .where('webhooks.organization_id', '=', organizationId)
      .where('webhooks.id', '=', id)
      .executeTakeFirst();
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('webhooks').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async deliveries(webhookId: string, limit: number, offset: number) {
    const [rows, count] = await Promise.all([
      this.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('webhook_id', '=', webhookId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      this.db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('webhook_id', '=', webhookId)
        .executeTakeFirstOrThrow(),
    ]);
    return { rows, total: Number(count.n) };
  }

  delivery(webhookId: string, id: string) {
    return this.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId).where('id', '=', id).executeTakeFirst();
  }

  async attemptsOf(deliveryIds: string[]) {
    if (deliveryIds.length === 0) return [];
    return this.db.selectFrom('webhook_delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('id').execute();
  }

  /** What a delivery job needs: the delivery, its webhook's address and sealed secret. */
  forDelivery(deliveryId: string) {
    return this.db
      .selectFrom('webhook_deliveries')
      .innerJoin('webhooks', 'webhooks.id', 'webhook_deliveries.webhook_id')
      .select([
        'webhook_deliveries.id',
        'webhook_deliveries.event',
        'webhook_deliveries.payload',
        'webhook_deliveries.status',
        'webhook_deliveries.job_id',
        'webhooks.url',
        'webhooks.secret_sealed',
      ])
      .where('webhook_deliveries.id', '=', deliveryId)
      .executeTakeFirst();
  }

  recordAttempt(attempt: { delivery_id: string; response_status: number | null; error: string | null; duration_ms: number }) {
    return this.db.insertInto('webhook_delivery_attempts').values(attempt).execute();
  }

  setStatus(deliveryId: string, status: 'pending' | 'succeeded' | 'failed', jobId?: string) {
    return this.db
      .updateTable('webhook_deliveries')
      .set({ status, updated_at: sql`now()`, ...(jobId ? { job_id: jobId } : {}) })
      .where('id', '=', deliveryId)
      .execute();
  }
}
