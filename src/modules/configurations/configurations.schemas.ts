import { Type } from 'typebox';
import { Id, Timestamp } from '../../platform/http/schemas.js';

export const CONFIG_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const MAX_VALUE_BYTES = 32 * 1024;
export const SECRET_MASK = '**secret**';

const PREVIEWS_DESCRIPTION =
  'given to previews of pull requests from forks (default false): their builds and instances get only variables marked so';
const Previews = Type.Optional(Type.Boolean({ description: PREVIEWS_DESCRIPTION }));

const ConfigName = Type.String({ minLength: 1, maxLength: 255, pattern: CONFIG_NAME_PATTERN });
const ConfigValue = Type.String({ maxLength: MAX_VALUE_BYTES });

export const ConfigVariable = Type.Object(
  {
    id: Id,
    name: Type.String(),
    value: Type.String({ description: `"${SECRET_MASK}" for secrets: their values never leave the server` }),
    secret: Type.Boolean(),
    buildtime: Type.Boolean(),
    previews: Type.Boolean({ description: PREVIEWS_DESCRIPTION }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'ConfigVariable' },
);

export const CreateConfigBody = Type.Object(
  {
    name: ConfigName,
    value: ConfigValue,
    secret: Type.Optional(Type.Boolean()),
    buildtime: Type.Optional(Type.Boolean()),
    previews: Previews,
  },
  { additionalProperties: false },
);

export const UpdateConfigBody = Type.Object(
  {
    value: Type.Optional(ConfigValue),
    secret: Type.Optional(Type.Boolean()),
    buildtime: Type.Optional(Type.Boolean()),
    previews: Previews,
  },
  { additionalProperties: false, minProperties: 1 },
);

export const BulkConfigBody = Type.Object(
  {
    variables: Type.Optional(Type.Record(Type.String(), Type.String(), { description: '{NAME: value}' })),
    raw: Type.Optional(Type.String({ maxLength: 512 * 1024, description: 'dotenv text' })),
    secret: Type.Optional(Type.Boolean()),
    buildtime: Type.Optional(Type.Boolean()),
    previews: Previews,
  },
  { additionalProperties: false },
);

export const BulkConfigResult = Type.Object(
  {
    created: Type.Array(Type.String()),
    updated: Type.Array(Type.String({ description: 'existing non-secret names whose value changed' })),
    skipped: Type.Array(Type.String({ description: 'existing secrets, left as they were' })),
    errors: Type.Array(Type.Object({ name: Type.String(), message: Type.String() })),
  },
  { $id: 'BulkConfigResult' },
);

export const AppConfigParams = Type.Object({ application_id: Type.String({ format: 'uuid' }) });
export const AppConfigItemParams = Type.Object({
  application_id: Type.String({ format: 'uuid' }),
  config_id: Type.String({ format: 'uuid' }),
});
