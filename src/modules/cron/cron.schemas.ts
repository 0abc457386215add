import { Type } from 'typebox';
import { Id, NullableTimestamp, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';

export const CRON_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';

export const CronParams = Type.Object({
  application_id: Type.String({ format: 'uuid' }),
  name: Type.String({ pattern: CRON_NAME_PATTERN }),
});

export const CronEnvironmentQuery = Type.Object(
  { environment: Type.Optional(Type.String({ ...Slug, description: 'environment slug of the project; default production' })) },
  { additionalProperties: false },
);

export const CronRunsQuery = Type.Object(
  { ...PaginationQuery.properties, ...CronEnvironmentQuery.properties },
  { additionalProperties: false },
);

export const CronBody = Type.Object(
  {
    schedule: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'cron expression in UTC: minute hour day-of-month month day-of-week, or @hourly/@daily/…',
    }),
    command: Type.String({ minLength: 1, maxLength: 4096, description: 'Shell command line, run with `sh -c` as a one-off run' }),
    process_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: '^[A-Za-z0-9_-]+$',
        description: "Whose environment and pod class the runs get; default `web` (or the release's first process type)",
      }),
    ),
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 3600, default: 600 })),
  },
  { additionalProperties: false },
);

export const CronEntry = Type.Object(
  {
    id: Id,
    application_id: Id,
    environment_id: Id,
    name: Type.String(),
    schedule: Type.String(),
    command: Type.String(),
    process_type: Type.Union([Type.String(), Type.Null()]),
    timeout_seconds: Type.Integer(),
    source: Type.Union([Type.Literal('api'), Type.Literal('manifest')], {
      description: '`manifest`: from the deployed release’s slipway.json (replaced by the next deployment)',
    }),
    next_run_at: NullableTimestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'CronEntry' },
);
