import { Type, type Static } from 'typebox';
import { Id, Slug, Timestamp } from '../../platform/http/schemas.js';
import { ALERT_METRICS } from './alert-state.js';

export const OrgParams = Type.Object({ org_slug: Slug });
export const AlertRuleParams = Type.Object({ org_slug: Slug, rule: Type.String({ minLength: 1, maxLength: 100 }) });

export const CreateAlertRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9][a-z0-9._-]*$', description: 'unique in the organization' }),
    metric: Type.Union(
      ALERT_METRICS.map((m) => Type.Literal(m)),
      {
        description:
          'error_rate: share of 5xx answers (0..1) at the edge; p95_latency_ms: the edge’s 95th percentile; ' +
          'restarts: crash restarts of the instances; memory_percent: the largest share (0..100) of its memory limit ' +
          'any instance used in the window; log_matches: runtime log lines holding `pattern` (needs application_id)',
      },
    ),
    threshold: Type.Number({ minimum: 0, description: 'fires when the metric is above this' }),
    window_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'the metric is over this window; default 300' })),
    for_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 86400, description: 'pending this long before it fires; default 0 (the next evaluation)' }),
    ),
    min_requests: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'request metrics are judged only over this many requests; default 20' }),
    ),
    pattern: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'log_matches only: a plain substring (not a regular expression) a counted line holds',
      }),
    ),
    ignore_case: Type.Optional(Type.Boolean({ description: 'log_matches only: match the pattern in any case; default false' })),
    application_id: Type.Optional(Id),
    environment: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, description: 'an environment slug of the application (needs application_id)' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateAlertRuleBody = Static<typeof CreateAlertRuleBody>;

const State = Type.Union([Type.Literal('ok'), Type.Literal('pending'), Type.Literal('firing'), Type.Literal('resolved')]);

export const AlertRule = Type.Object(
  {
    id: Id,
    name: Type.String(),
    metric: Type.String(),
    threshold: Type.Number(),
    window_seconds: Type.Integer(),
    for_seconds: Type.Integer(),
    min_requests: Type.Integer(),
    pattern: Type.Union([Type.String(), Type.Null()], { description: 'log_matches: the substring counted' }),
    ignore_case: Type.Boolean(),
    application_id: Type.Union([Id, Type.Null()]),
    application: Type.Union([Type.String(), Type.Null()]),
    environment_id: Type.Union([Id, Type.Null()]),
    environment: Type.Union([Type.String(), Type.Null()]),
    state: State,
    state_since: Timestamp,
    value: Type.Union([Type.Number(), Type.Null()], { description: 'the metric at the last evaluation (null: too few requests)' }),
    evaluated: Type.Union([Timestamp, Type.Null()]),
    silenced_until: Type.Union([Timestamp, Type.Null()]),
    created: Timestamp,
  },
  { $id: 'AlertRule' },
);

export const AlertTransition = Type.Object({
  from: Type.String(),
  to: State,
  value: Type.Union([Type.Number(), Type.Null()]),
  notified: Type.Boolean({ description: 'false: silenced, or a transition nobody is told of (pending, back to ok)' }),
  at: Timestamp,
});

export const SilenceBody = Type.Object(
  { for_seconds: Type.Integer({ minimum: 1, maximum: 30 * 86400, description: 'no notifications for this long' }) },
  { additionalProperties: false },
);
