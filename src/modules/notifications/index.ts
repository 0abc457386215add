// The notifications module's public surface: Slack, Discord and e-mail channels fed by the webhook outbox.
export { NotificationsService } from './notifications.service.js';
export { NotificationDeliveries, NOTIFICATIONS_QUEUE } from './dispatcher.js';
export { NotificationsRepository } from './notifications.repository.js';
export { slackMessage, discordMessage, type NotificationFacts } from './messages.js';
export * from './wire.js';
