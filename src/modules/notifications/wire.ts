import type { AppContext } from '../../platform/context.js';
import { createMailer, mailConfigured } from '../../platform/mail/mailer.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { RequireOrganizationAdmin, WebhookDeliveries } from '../webhooks/index.js';
import { NotificationDeliveries } from './dispatcher.js';
import type { NotificationsRepository } from './notifications.repository.js';
import { notificationsRoutes } from './notifications.routes.js';
import { NotificationsService } from './notifications.service.js';

/**
 * Slack, Discord and e-mail channels: they read the webhook outbox through the webhook dispatcher
 * (`alsoFanOutTo`), so an event is fanned out once for both. `startDeliveries` is a start step.
 */
export function wireNotifications(deps: {
  ctx: AppContext;
  repository: NotificationsRepository;
  webhookDeliveries: WebhookDeliveries | null;
  requireOrganizationAdmin: RequireOrganizationAdmin;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const log = deps.log.child({ component: 'notifications' });
  const mailer = createMailer(ctx.config);
  const deliveries = ctx.jobs ? new NotificationDeliveries(deps.repository, ctx.secrets, ctx.jobs, ctx.config, log, mailer) : null;
  if (deliveries) deps.webhookDeliveries?.alsoFanOutTo((trx, event) => deliveries.fanOut(trx, event));
  const notifications = new NotificationsService(
    ctx.db,
    deps.repository,
    ctx.secrets,
    deps.requireOrganizationAdmin,
    { allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE, mailConfigured: mailConfigured(ctx.config) },
    deliveries,
  );
  const startDeliveries = async () => {
    try {
      await deliveries?.register();
    } catch (err) {
      log.error({ err }, 'starting notification deliveries failed');
    }
  };
  return { notifications, startDeliveries, routes: [notificationsRoutes(notifications)] } satisfies Wired;
}
