import { commonErrorResponses, ErrorResponse, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import {
  CreatedWebhook,
  CreateWebhookBody,
  Delivery,
  DeliveryList,
  DeliveryParams,
  DeliveryQuery,
  OrgParams,
  Webhook,
  WebhookParams,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';
import { Type } from 'typebox';

const BASE = '/organizations/:org_slug/webhooks';

/** Outbound webhooks of an organization (its admins). */
export function webhooksRoutes(webhooks: WebhooksService) {
  const tags = ['Webhooks'];
  return async (app: App) => {
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Subscribe an address to platform events (the signing secret is shown once, in this response)',
          description:
            'Each delivery is a POST of JSON `{id, event, occurred_at, organization_id, project_id, data}` with headers ' +
            '`X-Slipway-Event`, `X-Slipway-Delivery` (the delivery id) and `X-Slipway-Signature: sha256=<hex HMAC-SHA256 of the body>`; ' +
            'any answer other than 2xx is retried with exponential backoff.',
          params: OrgParams,
          body: CreateWebhookBody,
          response: { 201: CreatedWebhook, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await webhooks.create(currentUser(request).id, request.params.org_slug, request.body)),
    );

    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The organization's webhooks",
          params: OrgParams,
          response: { 200: Type.Array(Webhook), ...commonErrorResponses },
        },
      },
      async (request) => webhooks.list(currentUser(request).id, request.params.org_slug),
    );

    app.get(
      `${BASE}/:webhook_id`,
      { schema: { tags, summary: 'A webhook', params: WebhookParams, response: { 200: Webhook, ...commonErrorResponses } } },
      async (request) => webhooks.get(currentUser(request).id, request.params.org_slug, request.params.webhook_id),
    );

    app.delete(
      `${BASE}/:webhook_id`,
      {
        schema: {
          tags,
          summary: 'Delete a webhook (and its delivery log)',
          params: WebhookParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        await webhooks.delete(currentUser(request).id, request.params.org_slug, request.params.webhook_id);
        return { ok: true };
      },
    );

    app.get(
      `${BASE}/:webhook_id/deliveries`,
      {
        schema: {
          tags,
          summary: "The webhook's deliveries, newest first, each with every attempt's response status or error",
          params: WebhookParams,
          querystring: DeliveryQuery,
          response: { 200: DeliveryList, ...commonErrorResponses },
        },
      },
      async (request) => webhooks.deliveryLog(currentUser(request).id, request.params.org_slug, request.params.webhook_id, request.query),
    );

    app.post(
      `${BASE}/:webhook_id/deliveries/:delivery_id/redeliver`,
      {
        schema: {
          tags,
          summary: 'Send a delivery again (same payload and delivery id); answers 202 with the delivery, queued',
          params: DeliveryParams,
          response: { 202: Delivery, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request, reply) =>
        reply
          .code(202)
          .send(
            await webhooks.redeliver(
              currentUser(request).id,
              request.params.org_slug,
              request.params.webhook_id,
              request.params.delivery_id,
            ),
          ),
    );
  };
}
