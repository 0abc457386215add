import { Type, type Static } from 'typebox';
import { Id, IdParam, Paginated, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';
import { WEBHOOK_EVENTS } from '../../platform/webhook-events.js';

export const NotificationEventName = Type.Union(
  WEBHOOK_EVENTS.map((e) => Type.Literal(e)),
  { description: `One of: ${WEBHOOK_EVENTS.join(', ')}` },
);

export const ChannelKind = Type.Union([Type.Literal('slack'), Type.Literal('discord'), Type.Literal('email')], {
  description:
    'slack: a Slack incoming webhook (Block Kit); discord: a Discord channel webhook (embeds); ' +
    'email: e-mail with a text and an HTML part, through the operator’s SMTP server',
});

export const CreateChannelBody = Type.Object(
  {
    kind: ChannelKind,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'a label; default: the kind' })),
    url: Type.String({
      minLength: 8,
      maxLength: 2048,
      description:
        'the incoming-webhook address (a secret: stored sealed, shown only as its host and last characters); ' +
        'private and loopback addresses are refused unless the operator allows them (WEBHOOK_ALLOW_PRIVATE). ' +
        'For email: `mailto:` and up to 20 comma-separated addresses',
    }),
    events: Type.Array(NotificationEventName, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true }),
    environments: Type.Optional(
      Type.Array(Type.String({ ...Slug }), {
        minItems: 1,
        maxItems: 50,
        uniqueItems: true,
        description: 'only events of these environments (slugs); events of no environment, such as builds, always pass',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateChannelBody = Static<typeof CreateChannelBody>;

export const NotificationChannel = Type.Object(
  {
    id: Id,
    kind: ChannelKind,
    name: Type.String(),
    url: Type.String({ description: 'the address masked: its host and last four characters (email: the mailto: recipients)' }),
    events: Type.Array(Type.String()),
    environments: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every environment' }),
    created: Timestamp,
  },
  { $id: 'NotificationChannel' },
);
export type NotificationChannel = Static<typeof NotificationChannel>;

export const NotificationDeliveryAttempt = Type.Object({
  response_status: Type.Union([Type.Integer(), Type.Null()], {
    description: "the service's HTTP status (email: the SMTP server's reply code); null when it did not answer",
  }),
  error: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
  at: Timestamp,
});

export const NotificationDelivery = Type.Object(
  {
    id: Id,
    event: Type.String({ description: 'the platform event, or `test` for the test button' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: 'the message as sent (Slack blocks, a Discord embed, or an e-mail’s subject, text and html)',
    }),
    attempts: Type.Array(NotificationDeliveryAttempt),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'NotificationDelivery' },
);
export type NotificationDelivery = Static<typeof NotificationDelivery>;

export const NotificationDeliveryList = Paginated(NotificationDelivery);
export const NotificationDeliveryQuery = PaginationQuery;

export const OrgParams = Type.Object({ org_slug: Slug });
export const ChannelParams = Type.Object({ org_slug: Slug, channel_id: IdParam });
