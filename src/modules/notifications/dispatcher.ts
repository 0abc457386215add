import { CompiledQuery, sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { PipelineJobs, SqlExecutor } from '../../platform/jobs/index.js';
import { mailErrorText, type Mailer, type MailMessage } from '../../platform/mail/mailer.js';
import { postDelivery, type OutboxEvent } from '../webhooks/index.js';
import { messageFor, type ChannelKind, type NotificationFacts } from './messages.js';
import type { NotificationsRepository } from './notifications.repository.js';
import { recipientsOf } from './recipients.js';

export const NOTIFICATIONS_QUEUE = 'notifications';

interface Logger {
  warn(obj: object, msg?: string): void;
}

function executorOf(trx: Db): SqlExecutor {
  return {
    async executeSql(text, values) {
      const result = await trx.executeQuery(CompiledQuery.raw(text, values));
      return { rows: result.rows as unknown[] };
    },
  };
}

const text = (v: unknown) => (typeof v === 'string' && v ? v : null);

/**
 * Slack, Discord and e-mail deliveries: each outbox event the webhook dispatcher reads becomes one
 * message per interested channel (rendered now, in the service's format), a durable job retried
 * with backoff by pg-boss; every attempt is logged.
 */
export class NotificationDeliveries {
  constructor(
    private readonly repo: NotificationsRepository,
    private readonly secrets: SecretBox,
    private readonly jobs: PipelineJobs,
    private readonly config: Pick<
      Config,
      'WEBHOOK_ALLOW_PRIVATE' | 'WEBHOOK_MAX_ATTEMPTS' | 'WEBHOOK_RETRY_DELAY_SECONDS' | 'WEBHOOK_TIMEOUT_MS' | 'DASHBOARD_URL' | 'PORT'
    >,
    private readonly log: Logger,
    /** The operator's SMTP server; null: e-mail channels cannot be made (and a leftover delivery fails). */
    private readonly mailer: Mailer | null,
  ) {}

  register(): Promise<void> {
    return this.jobs.addQueue(
      NOTIFICATIONS_QUEUE,
      { retryLimit: this.config.WEBHOOK_MAX_ATTEMPTS - 1, retryDelaySeconds: this.config.WEBHOOK_RETRY_DELAY_SECONDS },
      (data, job) => this.deliver(String(data.deliveryId), job.retryCount),
    );
  }

  private dashboard(): string {
    return (this.config.DASHBOARD_URL ?? `http://localhost:${this.config.PORT}`).replace(/\/+$/, '');
  }

  /** One outbox event, in the dispatcher's transaction: a delivery per channel that takes it. */
  async fanOut(trx: Db, event: OutboxEvent): Promise<void> {
    const channels = await this.repo.channelsFor(trx, event.organization_id, event.event);
    if (channels.length === 0) return;
    // Under a savepoint: a notification that cannot be made drops alone, never the batch's webhooks or other tenants' events.
    await sql`SAVEPOINT notification_fan_out`.execute(trx);
    try {
      const facts = await this.factsOf(trx, event);
      for (const channel of channels) {
        // An event of no environment (a build) reaches every channel; the filter is for deploys.
        if (channel.environments && facts.environment && !channel.environments.includes(facts.environment)) continue;
        await this.create(trx, channel, event.event, facts);
      }
      await sql`RELEASE SAVEPOINT notification_fan_out`.execute(trx);
    } catch (err) {
      // The job store closed under it (this process is stopping): the whole batch waits in the outbox instead.
      if (!this.jobs.isOpen) throw err;
      await sql`ROLLBACK TO SAVEPOINT notification_fan_out`.execute(trx);
      this.log.warn({ err, event: event.event, organizationId: event.organization_id }, 'notifications of an event dropped');
    }
  }

  /** Records and queues one delivery of `facts` to a channel (the test button uses it too). */
  async create(trx: Db, channel: { id: string; kind: ChannelKind }, event: string, facts: NotificationFacts): Promise<string> {
    const id = uuidv7();
    await this.repo.insertDelivery(trx, { id, channel_id: channel.id, event, payload: JSON.stringify(messageFor(channel.kind, facts)) });
    await this.repo.setJob(trx, id, await this.jobs.sendTo(NOTIFICATIONS_QUEUE, { deliveryId: id }, executorOf(trx)));
    return id;
  }

  async testFacts(db: Db, organizationId: string, who: string): Promise<NotificationFacts> {
    const org = await this.repo.organizationSlug(db, organizationId);
    return {
      event: 'test',
      organization: org?.slug ?? '',
      project: null,
      app: null,
      environment: null,
      release: null,
      who,
      status: null,
      detail: 'This channel is connected to Slipway.',
      link: `${this.dashboard()}/orgs/${org?.slug ?? ''}`,
      occurredAt: new Date().toISOString(),
    };
  }

  private async factsOf(trx: Db, event: OutboxEvent): Promise<NotificationFacts> {
    const data = event.data;
    const applicationId = text(data.application_id);
    const subjectId = text(data.subject_id);
    const names = applicationId ? await this.repo.applicationNames(trx, applicationId) : undefined;
    const org = names ? { slug: names.organization } : await this.repo.organizationSlug(trx, event.organization_id);
    const subject = subjectId ? await this.repo.subjectFacts(trx, subjectId) : null;
    // An instance's event names its environment by id.
    const environmentId = text(data.environment_id);
    const environment =
      subject?.environment ?? text(data.environment) ?? (environmentId ? await this.repo.environmentSlug(trx, environmentId) : null);
    const link = names
      ? `${this.dashboard()}/apps/${names.organization}/${names.project}/${names.app}`
      : `${this.dashboard()}/orgs/${org?.slug ?? ''}`;
    return {
      event: event.event,
      organization: org?.slug ?? '',
      project: names?.project ?? null,
      app: names?.app ?? null,
      environment,
      release: subject?.version ?? null,
      who: subject?.who ?? null,
      status: text(data.status),
      detail: text(data.error_detail) ?? text(data.message) ?? text(data.reason),
      link,
      occurredAt: new Date(event.occurred_at).toISOString(),
    };
  }

  /** One attempt; throws (so pg-boss retries it later) unless the service took the message (2xx, or SMTP 2xx). */
  async deliver(deliveryId: string, retryCount: number): Promise<void> {
    const delivery = await this.repo.forDelivery(deliveryId);
    if (!delivery) return; // its channel was deleted meanwhile
    const started = Date.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      status =
        delivery.kind === 'email'
          ? await this.mail(this.secrets.open(delivery.url_sealed), delivery.payload as Omit<MailMessage, 'to'>)
          : await postDelivery(
              this.secrets.open(delivery.url_sealed),
              JSON.stringify(delivery.payload),
              { 'user-agent': 'Slipway-Notifications/1' },
              { allowPrivate: this.config.WEBHOOK_ALLOW_PRIVATE, timeoutMs: this.config.WEBHOOK_TIMEOUT_MS },
            );
    } catch (err) {
      // The URL is a credential: an error names no address (transport errors carry none).
      error = delivery.kind === 'email' ? mailErrorText(err) : err instanceof Error ? err.message : String(err);
      // A refusal by the mail server keeps its reply code (a 4xx is retried like a 5xx from a webhook).
      if (delivery.kind === 'email') status = (err as { responseCode?: number }).responseCode ?? null;
    }
    await this.repo.recordAttempt({ delivery_id: deliveryId, response_status: status, error, duration_ms: Date.now() - started });
    if (status !== null && status >= 200 && status < 300) {
      await this.repo.setStatus(deliveryId, 'succeeded');
      return;
    }
    const last = retryCount + 1 >= this.config.WEBHOOK_MAX_ATTEMPTS;
    if (last) await this.repo.setStatus(deliveryId, 'failed');
    this.log.warn({ deliveryId, status, error, attempt: retryCount + 1 }, last ? 'notification failed' : 'notification failed; will retry');
    throw new Error(error ?? `the service answered ${status}`);
  }

  /** Sends an e-mail; its SMTP reply code stands for the status (250: accepted). */
  private async mail(mailto: string, message: Omit<MailMessage, 'to'>): Promise<number | null> {
    if (!this.mailer) throw Object.assign(new Error('no SMTP server is configured'), { code: 'ENOSMTP' });
    const receipt = await this.mailer.send({ ...message, to: recipientsOf(mailto) });
    return receipt.code ?? 250;
  }
}
