import { v7 as uuidv7 } from 'uuid';
import { describeAuditedChange } from '../../platform/audit/request-audit.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, invalid, notFound } from '../../platform/errors.js';
import { iso, paginate, type PaginationQuery } from '../../platform/http/schemas.js';
import { checkWebhookUrl, RefusedAddress, type RequireOrganizationAdmin } from '../webhooks/index.js';
import type { NotificationDeliveries } from './dispatcher.js';
import type { NotificationsRepository } from './notifications.repository.js';
import { BadRecipients, recipientsOf } from './recipients.js';
import type { CreateChannelBody, NotificationChannel, NotificationDelivery } from './notifications.schemas.js';

type ChannelRow = Awaited<ReturnType<NotificationsRepository['list']>>[number];

/** The address shown: the host and the last four characters, enough to tell two channels apart. */
export function maskedUrl(url: URL): string {
  return `${url.host}/…${url.href.slice(-4)}`;
}

const view = (row: ChannelRow): NotificationChannel => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  url: row.url_hint,
  events: row.events,
  environments: row.environments,
  created: iso(row.created_at),
});

/** An organization's Slack and Discord channels (its admins manage them). */
export class NotificationsService {
  constructor(
    private readonly db: Db,
    private readonly repo: NotificationsRepository,
    private readonly secrets: SecretBox,
    private readonly requireAdmin: RequireOrganizationAdmin,
    private readonly settings: { allowPrivate: boolean; mailConfigured: boolean },
    /** Absent in processes without the job store: the test button then answers 503. */
    private readonly deliveries: NotificationDeliveries | null,
  ) {}

  async create(userId: string, orgSlug: string, input: CreateChannelBody): Promise<NotificationChannel> {
    const org = await this.requireAdmin(userId, orgSlug);
    const urlHint = input.kind === 'email' ? this.checkRecipients(input.url) : maskedUrl(await this.checkUrl(input.url));
    const id = uuidv7();
    const values = {
      kind: input.kind,
      name: input.name ?? input.kind,
      url_hint: urlHint,
      events: input.events,
      environments: input.environments ?? null,
    };
    describeAuditedChange({ organizationId: org.id, resourceType: 'notification_channels', resourceId: id, after: values });
    const row = await this.repo.insert({
      id,
      organization_id: org.id,
      url_sealed: this.secrets.seal(input.url),
      created_by: userId,
      ...values,
    });
    return view(row);
  }

  private async checkUrl(text: string): Promise<URL> {
    try {
      return await checkWebhookUrl(text, this.settings.allowPrivate);
    } catch (err) {
      if (err instanceof RefusedAddress) throw invalid('url', err.message.replace(/^url /, ''));
      throw err;
    }
  }

  /** An e-mail channel's recipients, shown whole to the organization's admins (they are not a credential). */
  private checkRecipients(text: string): string {
    if (!this.settings.mailConfigured) throw invalid('kind', 'email needs an SMTP server, which this installation has not configured');
    try {
      return `mailto:${recipientsOf(text).join(',')}`;
    } catch (err) {
      if (err instanceof BadRecipients) throw invalid('url', err.message);
      throw err;
    }
  }

  async list(userId: string, orgSlug: string): Promise<NotificationChannel[]> {
    const org = await this.requireAdmin(userId, orgSlug);
    return (await this.repo.list(org.id)).map(view);
  }

  private async find(userId: string, orgSlug: string, id: string) {
    const org = await this.requireAdmin(userId, orgSlug);
    const channel = await this.repo.find(org.id, id);
    if (!channel) throw notFound('Notification channel');
    return { org, channel };
  }

  async get(userId: string, orgSlug: string, id: string): Promise<NotificationChannel> {
    return view((await this.find(userId, orgSlug, id)).channel);
  }

  async delete(userId: string, orgSlug: string, id: string) {
    const { org, channel } = await this.find(userId, orgSlug, id);
    describeAuditedChange({
      organizationId: org.id,
      resourceType: 'notification_channels',
      resourceId: id,
      before: view(channel),
      after: null,
    });
    if (!(await this.repo.delete(org.id, id))) throw notFound('Notification channel');
  }

  /** The test button: one `test` message through the same delivery path (queued; see its deliveries). */
  async test(userId: string, username: string, orgSlug: string, id: string): Promise<NotificationDelivery> {
    const { org, channel } = await this.find(userId, orgSlug, id);
    const deliveries = this.deliveries;
    if (!deliveries) throw new AppError('UNAVAILABLE', 'This server runs no job queue; notifications are unavailable');
    const facts = await deliveries.testFacts(this.db, org.id, username);
    const deliveryId = await this.db.transaction().execute((trx) => deliveries.create(trx, channel, 'test', facts));
    const [fresh] = await this.withAttempts([(await this.repo.delivery(channel.id, deliveryId))!]);
    return fresh!;
  }

  async deliveryLog(userId: string, orgSlug: string, id: string, query: PaginationQuery) {
    const { channel } = await this.find(userId, orgSlug, id);
    const page = await paginate(
      query,
      (limit, offset) => this.repo.deliveries(channel.id, limit, offset),
      (row) => row,
    );
    return { ...page, items: await this.withAttempts(page.items) };
  }

  private async withAttempts(
    rows: Array<NonNullable<Awaited<ReturnType<NotificationsRepository['delivery']>>>>,
  ): Promise<NotificationDelivery[]> {
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
