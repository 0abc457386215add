// The webhooks module's public surface: event names live in platform/webhook-events.ts (any module publishes there).
export { WebhooksService, type RequireOrganizationAdmin } from './webhooks.service.js';
export { WebhookDeliveries, WEBHOOKS_QUEUE, type OutboxEvent } from './deliveries.js';
export { webhooksRoutes } from './webhooks.routes.js';
export { signatureOf } from './signature.js';
export { checkWebhookUrl, postDelivery, RefusedAddress } from './transport.js';
export { WebhooksRepository } from './webhooks.repository.js';
export * from './wire.js';
