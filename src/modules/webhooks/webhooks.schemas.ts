import { Type, type Static } from 'typebox';
import { Id, IdParam, Paginated, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';
import { WEBHOOK_EVENTS } from '../../platform/webhook-events.js';

export const WebhookEventName = Type.Union(
  WEBHOOK_EVENTS.map((e) => Type.Literal(e)),
  { description: `One of: ${WEBHOOK_EVENTS.join(', ')}` },
);

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({
      minLength: 8,
      maxLength: 2048,
      description: 'http(s) address of the receiver; private and loopback addresses are refused unless the operator allows them',
    }),
    events: Type.Array(WebhookEventName, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true }),
    project: Type.Optional(Type.String({ ...Slug, description: 'only this project’s events (slug); default: the whole organization' })),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const Webhook = Type.Object(
  {
    id: Id,
    url: Type.String(),
    events: Type.Array(Type.String()),
    project: Type.Union([Type.String(), Type.Null()], { description: 'project slug, or null for the whole organization' }),
    created: Timestamp,
  },
  { $id: 'Webhook' },
);
export type Webhook = Static<typeof Webhook>;

export const CreatedWebhook = Type.Object({
  ...Webhook.properties,
  secret: Type.String({
    description: 'HMAC-SHA256 key of `X-Slipway-Signature: sha256=<hex of HMAC(secret, body)>`. Shown only in this response.',
  }),
});

export const DeliveryAttempt = Type.Object({
  response_status: Type.Union([Type.Integer(), Type.Null()], { description: "the receiver's HTTP status; null when it did not answer" }),
  error: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
  at: Timestamp,
});

export const Delivery = Type.Object(
  {
    id: Id,
    event: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
    payload: Type.Record(Type.String(), Type.Unknown()),
    attempts: Type.Array(DeliveryAttempt),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'WebhookDelivery' },
);
export type Delivery = Static<typeof Delivery>;

export const DeliveryList = Paginated(Delivery);
export const DeliveryQuery = PaginationQuery;

export const OrgParams = Type.Object({ org_slug: Slug });
export const WebhookParams = Type.Object({ org_slug: Slug, webhook_id: IdParam });
export const DeliveryParams = Type.Object({ org_slug: Slug, webhook_id: IdParam, delivery_id: IdParam });
