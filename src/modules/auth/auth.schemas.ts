import { Type } from 'typebox';
import { Id, NullableTimestamp, Timestamp } from '../../platform/http/schemas.js';
import { ACTION_MEANINGS, KEY_ACTIONS } from '../../platform/access/route-actions.js';

export const SessionUser = Type.Object({
  id: Id,
  username: Type.String(),
  email: Type.String(),
  is_admin: Type.Boolean(),
});

export const Session = Type.Object({ authenticated: Type.Boolean(), user: Type.Union([SessionUser, Type.Null()]) }, { $id: 'Session' });

export const LoginBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);

const Action = Type.Union(
  [
    Type.Literal('read'),
    Type.Literal('deploy'),
    Type.Literal('config:write'),
    Type.Literal('scale'),
    Type.Literal('run'),
    Type.Literal('manage'),
  ],
  {
    description: Object.entries(ACTION_MEANINGS)
      .map(([a, m]) => `\`${a}\`: ${m}`)
      .join('; '),
  },
);
const NullableSlug = Type.Union([Type.String(), Type.Null()]);

export const KeyScopeView = Type.Object(
  {
    organization: NullableSlug,
    project: NullableSlug,
    application: NullableSlug,
    environment: NullableSlug,
    actions: Type.Union([Type.Array(Action), Type.Null()], { description: 'null: every action' }),
  },
  { description: "The key's limits; null (the whole field): everything its user can do" },
);

export const ApiKey = Type.Object(
  {
    id: Id,
    name: Type.String(),
    kind: Type.Union([Type.Literal('api_key'), Type.Literal('deploy_token'), Type.Literal('cli_login')]),
    prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
    created: Timestamp,
    last_used: NullableTimestamp,
    last_used_address: Type.Union([Type.String(), Type.Null()], { description: 'The client address of its last use' }),
    expires: NullableTimestamp,
    scope: Type.Union([KeyScopeView, Type.Null()]),
  },
  { $id: 'ApiKey' },
);

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: 'The key itself: shown once, never again' }),
});

const ScopeSlug = (what: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: `${what} slug` }));

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'A moment in the future; instead of expires_in_days' })),
    kind: Type.Optional(
      Type.Union([Type.Literal('api_key'), Type.Literal('deploy_token')], {
        description: '`deploy_token`: deploys one application to one environment (names all four and only the `deploy` action)',
      }),
    ),
    organization: ScopeSlug('Limit to this organization:'),
    project: ScopeSlug('Limit to this project of the organization:'),
    application: ScopeSlug('Limit to this application of the project:'),
    environment: ScopeSlug('Limit to this environment of the project:'),
    actions: Type.Optional(Type.Array(Action, { minItems: 1, maxItems: KEY_ACTIONS.length, description: 'Limit to these actions' })),
  },
  { additionalProperties: false },
);

export const CliLoginBody = Type.Object(
  {
    code: Type.String({
      minLength: 4,
      maxLength: 64,
      pattern: '^[A-Za-z0-9-]+$',
      description: 'The code the CLI shows (Ancla: XXXX-XXXX)',
    }),
    port: Type.Integer({ minimum: 1024, maximum: 65535, description: "The CLI's callback port on 127.0.0.1" }),
    client: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Which CLI asks (shown to the user and in the key name)' }),
    ),
    organization: ScopeSlug('Limit the key to this organization:'),
    actions: Type.Optional(Type.Array(Action, { minItems: 1, maxItems: KEY_ACTIONS.length, description: 'default: read and deploy' })),
  },
  { additionalProperties: false },
);

export const CliLoginApproved = Type.Object({
  callback: Type.String({ description: "Where the browser goes next: the CLI's loopback callback, carrying the key (shown once)" }),
  key: Type.Object({ id: Id, name: Type.String(), prefix: Type.String() }),
});
