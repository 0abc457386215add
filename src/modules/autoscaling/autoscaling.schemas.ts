import { Type } from 'typebox';
import { Id, NullableTimestamp, Paginated, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';
import { PROCESS_TYPE_PATTERN } from '../applications/index.js';

/** Process counts are at most 100 per type (as `/scale`). */
export const MAX_INSTANCES = 100;

export const AutoscaleTarget = Type.Union(
  [
    Type.Object(
      {
        cpu_percent: Type.Integer({ minimum: 1, maximum: 1000, description: "average CPU per instance, % of its pod class's CPU request" }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        requests_per_second: Type.Number({
          exclusiveMinimum: 0,
          maximum: 1_000_000,
          description: 'requests per second per instance the edge routes to this process type (`web`)',
        }),
      },
      { additionalProperties: false },
    ),
  ],
  { $id: 'AutoscaleTarget' },
);

export const ProcessTypeParams = Type.Object({
  application_id: Type.String({ format: 'uuid' }),
  process_type: Type.String({ pattern: PROCESS_TYPE_PATTERN }),
});

export const AutoscaleEnvironmentQuery = Type.Object(
  { environment: Type.Optional(Type.String({ ...Slug, description: 'environment slug of the project; default production' })) },
  { additionalProperties: false },
);

export const AutoscaleBody = Type.Object(
  {
    min: Type.Integer({ minimum: 1, maximum: MAX_INSTANCES }),
    max: Type.Integer({ minimum: 1, maximum: MAX_INSTANCES }),
    target: AutoscaleTarget,
    cooldown_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 86_400, default: 300, description: 'least time after a change before scaling down' }),
    ),
  },
  { additionalProperties: false },
);

export const AutoscalePolicy = Type.Object(
  {
    id: Id,
    application_id: Id,
    environment_id: Id,
    process_type: Type.String(),
    min: Type.Integer(),
    max: Type.Integer(),
    target: AutoscaleTarget,
    cooldown_seconds: Type.Integer(),
    last_evaluated_at: NullableTimestamp,
    last_scaled_at: NullableTimestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'AutoscalePolicy' },
);

export const ScaleEvent = Type.Object(
  {
    id: Id,
    application_id: Id,
    environment_id: Id,
    process_type: Type.String(),
    from: Type.Integer(),
    to: Type.Integer(),
    reason: Type.String(),
    metric: Type.Record(Type.String(), Type.Union([Type.Number(), Type.Null()])),
    created_at: Timestamp,
  },
  { $id: 'ScaleEvent' },
);

export const ScaleEventsQuery = Type.Object(
  { ...PaginationQuery.properties, ...AutoscaleEnvironmentQuery.properties },
  { additionalProperties: false },
);
export const ScaleEventList = Paginated(ScaleEvent);
