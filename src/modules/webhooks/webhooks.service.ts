import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { describeAuditedChange } from '../../platform/audit/request-audit.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, invalid, notFound } from '../../platform/errors.js';
import { iso, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import type { WebhookDeliveries } from './deliveries.js';
import { checkWebhookUrl, RefusedAddress } from './transport.js';
import { WebhooksRepository } from './webhooks.repository.js';
import type { CreateWebhookBody, Delivery, Webhook } from './webhooks.schemas.js';

/** The organization a caller administers, by slug (403/404 otherwise). */
export type RequireOrganizationAdmin = (userId: string, slug: string) => Promise<{ id: string }>;

type WebhookRow = NonNullable<Awaited<ReturnType<WebhooksRepository['find']>>>;

const view = (row: WebhookRow): Webhook => ({
  id: row.id,
  url: row.url,
  events: row.events,
  project: row.project ?? null,
  created: iso(row.created_at),
});

/** An organization's outbound webhooks (its admins manage them). */
export class WebhooksService {
  private readonly repo: WebhooksRepository;

  constructor(
    private readonly db: Db,
    repo: WebhooksRepository,
    private readonly secrets: SecretBox,
    private readonly requireAdmin: RequireOrganizationAdmin,
    private readonly settings: { allowPrivate: boolean },
    /** Absent in processes without the job store: redelivery then answers 503. */
    private readonly deliveries: WebhookDeliveries | null,
  ) {
    this.repo = repo;
  }

  async create(userId: string, orgSlug: string, input: CreateWebhookBody) {
    const org = await this.requireAdmin(userId, orgSlug);
    let projectId: string | null = null;
    if (input.project) {
      const project = await this.repo.projectBySlug(org.id, input.project);
      if (!project) throw invalid('project', `no project ${input.project} in this organization`);
      projectId = project.id;
    }
    try {
      await checkWebhookUrl(input.url, this.settings.allowPrivate);
    } catch (err) {
      if (err instanceof RefusedAddress) throw invalid('url', err.message.replace(/^url /, ''));
      throw err;
    }
    const secret = `whsec_${randomBytes(24).toString('base64url')}`;
    const id = uuidv7();
    describeAuditedChange({
      organizationId: org.id,
      resourceType: 'webhooks',
      resourceId: id,
      after: { url: input.url, events: input.events, project: input.project ?? null },
    });
    const row = await this.repo.insert({
      id,
      organization_id: org.id,
      project_id: projectId,
      url: input.url,
      events: input.events,
      secret_sealed: this.secrets.seal(secret),
      created_by: userId,
    });
    return { id, url: input.url, events: [...input.events], project: input.project ?? null, created: iso(row.created_at), secret };
  }

  async list(userId: string, orgSlug: string): Promise<Webhook[]> {
    const org = await this.requireAdmin(userId, orgSlug);
    return (await this.repo.list(org.id)).map(view);
  }

  private async find(userId: string, orgSlug: string, id: string) {
    const org = await this.requireAdmin(userId, orgSlug);
    const hook = await this.repo.find(org.id, id);
    if (!hook) throw notFound('Webhook');
    return { org, hook };
  }

  async get(userId: string, orgSlug: string, id: string): Promise<Webhook> {
    return view((await this.find(userId, orgSlug, id)).hook);
  }

  async delete(userId: string, orgSlug: string, id: string) {
    const { org, hook } = await this.find(userId, orgSlug, id);
    describeAuditedChange({ organizationId: org.id, resourceType: 'webhooks', resourceId: id, before: view(hook), after: null });
    if (!(await this.repo.delete(org.id, id))) throw notFound('Webhook');
  }

  async deliveryLog(userId: string, orgSlug: string, id: string, query: PaginationQuery) {
    const { hook } = await this.find(userId, orgSlug, id);
    const page = await paginate(
      query,
      (limit, offset) => this.repo.deliveries(hook.id, limit, offset),
      (row) => row,
    );
    return { ...page, items: await this.withAttempts(page.items) };
  }

  /** Sends a delivery again (same payload and X-Slipway-Delivery id; its attempts continue in the log). */
  async redeliver(userId: string, orgSlug: string, id: string, deliveryId: string): Promise<Delivery> {
    const { org, hook } = await this.find(userId, orgSlug, id);
    const delivery = await this.repo.delivery(hook.id, deliveryId);
    if (!delivery) throw notFound('Delivery');
    if (!this.deliveries) throw new AppError('UNAVAILABLE', 'This server runs no job queue; redelivery is unavailable');
    describeAuditedChange({
      organizationId: org.id,
      resourceType: 'webhook_deliveries',
      resourceId: deliveryId,
      before: { status: delivery.status },
    });
    const deliveries = this.deliveries;
    await this.db.transaction().execute((trx) => deliveries.enqueue(trx, deliveryId));
    const [fresh] = await this.withAttempts([(await this.repo.delivery(hook.id, deliveryId))!]);
    return fresh!;
  }

  private async withAttempts(rows: Array<NonNullable<Awaited<ReturnType<WebhooksRepository['delivery']>>>>): Promise<Delivery[]> {
    const attempts = await this.repo.attemptsOf(rows.map((r) => r.id));
    return rows.map((r) => ({
      id: r.id,
      event: r.event,
      status: r.status,
      payload: r.payload as Record<string, unknown>,
      attempts: attempts
        .filter((a) => a.delivery_id === r.id)
        .map((a) => ({ response_status: a.response_status, error: a.error, duration_ms: a.duration_ms, at: iso(a.attempted_at) })),
      created: iso(r.created_at),
      updated: iso(r.updated_at),
    }));
  }
}
