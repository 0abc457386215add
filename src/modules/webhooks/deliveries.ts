import { CompiledQuery, sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../../config.js';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { PipelineJobs, SqlExecutor } from '../../platform/jobs/index.js';
import { postDelivery } from './transport.js';
import { signatureOf } from './signature.js';
import { WebhooksRepository } from './webhooks.repository.js';

export const WEBHOOKS_QUEUE = 'webhooks';

interface Logger {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface OutboxEvent {
  id: number;
  organization_id: string;
  project_id: string | null;
  event: string;
  data: Record<string, unknown>;
  occurred_at: Date;
}

/** pg-boss statements on a Kysely transaction's connection: the job is queued only if the transaction commits. */
function executorOf(trx: Db): SqlExecutor {
  return {
    async executeSql(text, values) {
      const result = await trx.executeQuery(CompiledQuery.raw(text, values));
      return { rows: result.rows as unknown[] };
    },
  };
}

/**
 * Webhook deliveries: the dispatcher turns outbox events into one delivery per interested
 * webhook, each a durable job on its own queue (retried with backoff by pg-boss); the job
 * signs and POSTs the payload and logs every attempt.
 */
export class WebhookDeliveries {
  private readonly repo: WebhooksRepository;
  private draining: Promise<void> | null = null;
  private drainAgain = false;
  /** Other consumers of each outbox event (notification channels), in the same transaction. */
  private readonly readers: Array<(trx: Db, event: OutboxEvent) => Promise<void>> = [];

  constructor(
    private readonly db: Db,
    repo: WebhooksRepository,
    private readonly secrets: SecretBox,
    private readonly jobs: PipelineJobs,
    private readonly config: Pick<
      Config,
      'WEBHOOK_ALLOW_PRIVATE' | 'WEBHOOK_MAX_ATTEMPTS' | 'WEBHOOK_RETRY_DELAY_SECONDS' | 'WEBHOOK_TIMEOUT_MS'
    >,
    private readonly log: Logger,
  ) {
    this.repo = repo;
  }

  /** Adds a consumer that sees every outbox event this dispatcher takes, in its transaction. */
  alsoFanOutTo(reader: (trx: Db, event: OutboxEvent) => Promise<void>): void {
    this.readers.push(reader);
  }

  register(): Promise<void> {
    return this.jobs.addQueue(
      WEBHOOKS_QUEUE,
      { retryLimit: this.config.WEBHOOK_MAX_ATTEMPTS - 1, retryDelaySeconds: this.config.WEBHOOK_RETRY_DELAY_SECONDS },
      (data, job) => this.deliver(String(data.deliveryId), job.retryCount),
    );
  }

  /** Queues (again) a delivery's job in the caller's transaction. */
  async enqueue(trx: Db, deliveryId: string): Promise<void> {
    const jobId = await this.jobs.sendTo(WEBHOOKS_QUEUE, { deliveryId }, executorOf(trx));
    await trx
      .updateTable('webhook_deliveries')
      .set({ job_id: jobId, status: 'pending', updated_at: sql`now()` })
      .where('id', '=', deliveryId)
      .execute();
  }

  /** Empties the outbox (one run at a time per process; several processes share it through SKIP LOCKED). */
  drain(): Promise<void> {
    // The job store stopped (this process is stopping): the events wait in the outbox for the next drain.
    if (!this.jobs.isOpen) return Promise.resolve();
    if (this.draining) {
      this.drainAgain = true;
      return this.draining;
    }
    this.draining = (async () => {
      try {
        do {
          this.drainAgain = false;
          while (this.jobs.isOpen && (await this.fanOut()) > 0);
        } while (this.drainAgain);
      } catch (err) {
        this.log.error({ err }, 'dispatching webhook events failed');
      } finally {
        this.draining = null;
      }
    })();
    return this.draining;
  }

  private fanOut(): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const { rows: events } = await sql<OutboxEvent>`
        DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM webhook_outbox ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
        RETURNING *`.execute(trx);
      events.sort((a, b) => Number(a.id) - Number(b.id));
      for (const event of events) {
        const hooks = await trx
          .selectFrom('webhooks')
          .select('id')
          .where('organization_id', '=', event.organization_id)
          .where((eb) => eb.or([eb('project_id', 'is', null), eb('project_id', '=', event.project_id)]))
          .where(sql<boolean>`${event.event} = ANY(events)`)
          .execute();
        for (const hook of hooks) {
          const id = uuidv7();
          const payload = {
            id,
            event: event.event,
            occurred_at: new Date(event.occurred_at).toISOString(),
            organization_id: event.organization_id,
            project_id: event.project_id,
            data: event.data,
          };
          await trx
            .insertInto('webhook_deliveries')
            .values({ id, webhook_id: hook.id, event: event.event, payload: JSON.stringify(payload) })
            .execute();
          await this.enqueue(trx, id);
        }
        for (const reader of this.readers) await reader(trx, event);
      }
      return events.length;
    });
  }

  /** One attempt; throws (so pg-boss retries it later) unless the receiver answered 2xx. */
  async deliver(deliveryId: string, retryCount: number): Promise<void> {
    const delivery = await this.repo.forDelivery(deliveryId);
    if (!delivery) return; // its webhook was deleted meanwhile
    const body = JSON.stringify(delivery.payload);
    const started = Date.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      status = await postDelivery(
        delivery.url,
        body,
        {
          'user-agent': 'Slipway-Webhooks/1',
          'x-slipway-event': delivery.event,
          'x-slipway-delivery': delivery.id,
          'x-slipway-signature': signatureOf(this.secrets.open(delivery.secret_sealed), body),
        },
        { allowPrivate: this.config.WEBHOOK_ALLOW_PRIVATE, timeoutMs: this.config.WEBHOOK_TIMEOUT_MS },
      );
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    await this.repo.recordAttempt({ delivery_id: deliveryId, response_status: status, error, duration_ms: Date.now() - started });
    if (status !== null && status >= 200 && status < 300) {
      await this.repo.setStatus(deliveryId, 'succeeded');
      return;
    }
    const last = retryCount + 1 >= this.config.WEBHOOK_MAX_ATTEMPTS;
    if (last) await this.repo.setStatus(deliveryId, 'failed');
    this.log.warn(
      { deliveryId, status, error, attempt: retryCount + 1 },
      last ? 'webhook delivery failed' : 'webhook delivery failed; will retry',
    );
    throw new Error(error ?? `the receiver answered ${status}`);
  }
}
