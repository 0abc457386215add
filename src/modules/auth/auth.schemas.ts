import { Type } from 'typebox';
import { Id, NullableTimestamp, Timestamp } from '../../platform/http/schemas.js';

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

export const ApiKey = Type.Object(
  {
    id: Id,
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the key, to recognise it' }),
    created: Timestamp,
    last_used: NullableTimestamp,
    expires: NullableTimestamp,
  },
  { $id: 'ApiKey' },
);

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: 'The key itself: shown once, never again' }),
});

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  },
  { additionalProperties: false },
);
