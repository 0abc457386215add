import { Type } from 'typebox';
import { Id, Timestamp } from '../../platform/http/schemas.js';

export const USERNAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*$';

export const User = Type.Object(
  {
    id: Id,
    username: Type.String(),
    email: Type.String(),
    is_admin: Type.Boolean(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'User' },
);

export const CreateUserBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 63, pattern: USERNAME_PATTERN }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
    is_admin: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
