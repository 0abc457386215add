import type { AppContext } from '../../platform/context.js';
import type { Notifications } from '../../platform/db/notifications.js';
import { WEBHOOKS_CHANNEL } from '../../platform/webhook-events.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import { WebhookDeliveries } from './deliveries.js';
import type { WebhooksRepository } from './webhooks.repository.js';
import { webhooksRoutes } from './webhooks.routes.js';
import { WebhooksService, type RequireOrganizationAdmin } from './webhooks.service.js';

/**
 * Outbound webhooks: the outbox is fanned out into durable delivery jobs wherever the job store
 * is open. `startDeliveries` is a start step (src/lifecycle.ts).
 */
export function wireWebhooks(deps: {
  ctx: AppContext;
  repository: WebhooksRepository;
  notifications: Notifications;
  requireOrganizationAdmin: RequireOrganizationAdmin;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const log = deps.log.child({ component: 'webhooks' });
  const deliveries = ctx.jobs ? new WebhookDeliveries(ctx.db, deps.repository, ctx.secrets, ctx.jobs, ctx.config, log) : null;
  const webhooks = new WebhooksService(
    ctx.db,
    deps.repository,
    ctx.secrets,
    deps.requireOrganizationAdmin,
    { allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE },
    deliveries,
  );
  /** Registers the delivery queue, follows the outbox's channel and drains what waits. */
  const startDeliveries = async () => {
    if (!deliveries) return;
    try {
      await deliveries.register();
      // On the process's one LISTEN connection; a reconnect (null) may have lost a wake-up: drain then too.
      await deps.notifications.subscribeChannel(WEBHOOKS_CHANNEL, () => void deliveries.drain());
      await deliveries.drain();
    } catch (err) {
      log.error({ err }, 'starting webhook deliveries failed');
    }
  };
  const sweepers = deliveries ? [{ sweep: () => deliveries.drain() }] : [];
  return { webhooks, deliveries, startDeliveries, routes: [webhooksRoutes(webhooks)], sweepers } satisfies Wired;
}
