import { Type, type Static } from 'typebox';
import { Id, IdParam, Slug, Timestamp } from '../../platform/http/schemas.js';

export const DrainKind = Type.Union([Type.Literal('syslog'), Type.Literal('https'), Type.Literal('otlp')], {
  description:
    'syslog: RFC 5424 with octet-counting framing over TCP (`syslog+tcp://host:port`) or TLS (`syslog+tls://host:port`); ' +
    'https: JSON lines (`application/x-ndjson`) POSTed in batches with the header `X-Slipway-Drain-Secret`; ' +
    'otlp: an OTLP/HTTP logs collector (`https://collector:4318/v1/logs`), JSON encoding',
});

export const DrainSource = Type.Union([Type.Literal('runtime'), Type.Literal('build'), Type.Literal('deploy')], {
  description: 'runtime: the instances’ output; build: build and release logs; deploy: deployment logs',
});

export const CreateDrainBody = Type.Object(
  {
    kind: DrainKind,
    url: Type.String({
      minLength: 8,
      maxLength: 2048,
      description: 'where the logs go (stored sealed); private and loopback hosts are refused unless WEBHOOK_ALLOW_PRIVATE=true',
    }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'a label; default: the kind' })),
    application: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$',
        maxLength: 130,
        description: '`project/app`: only this application’s logs; default: every application of the organization',
      }),
    ),
    sources: Type.Optional(
      Type.Array(DrainSource, { minItems: 1, maxItems: 3, uniqueItems: true, description: 'default: runtime, build and deploy' }),
    ),
    ca: Type.Optional(
      Type.String({
        maxLength: 65536,
        description: 'syslog+tls only: PEM certificate(s) that may sign the server’s (default: the system’s authorities)',
      }),
    ),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'otlp only: sent as `Authorization: Bearer …`' })),
  },
  { additionalProperties: false },
);
export type CreateDrainBody = Static<typeof CreateDrainBody>;

export const LogDrain = Type.Object(
  {
    id: Id,
    kind: DrainKind,
    name: Type.String(),
    url: Type.String({ description: 'the address without anything secret: a syslog server whole, else its host and last characters' }),
    application: Type.Union([Type.String(), Type.Null()], { description: '`project/app`, or null for every application' }),
    sources: Type.Array(DrainSource),
    lines_sent: Type.Integer(),
    lines_dropped: Type.Integer({ description: 'lines given up because the drain fell behind (its buffer was full)' }),
    failed_sends: Type.Integer({ description: 'sends that failed (each retried with backoff)' }),
    last_error: Type.Union([Type.String(), Type.Null()]),
    last_error_at: Type.Union([Timestamp, Type.Null()]),
    last_sent_at: Type.Union([Timestamp, Type.Null()]),
    created: Timestamp,
  },
  { $id: 'LogDrain' },
);
export type LogDrain = Static<typeof LogDrain>;

export const CreatedLogDrain = Type.Object({
  ...LogDrain.properties,
  secret: Type.Union([Type.String(), Type.Null()], {
    description: 'https: the value of `X-Slipway-Drain-Secret` on every request, shown only in this response; else null',
  }),
});

export const OrgParams = Type.Object({ org_slug: Slug });
export const DrainParams = Type.Object({ org_slug: Slug, drain_id: IdParam });
