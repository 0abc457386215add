import { Type } from 'typebox';
import { NullableTimestamp } from '../../platform/http/schemas.js';

/** Bounds of the tenant's text on the page (the migration checks the same length). */
export const MAINTENANCE_MESSAGE_MAX = 2000;
export const DEFAULT_RETRY_AFTER_SECONDS = 300;

export const MaintenanceBody = Type.Object(
  {
    enabled: Type.Boolean({ description: 'true: the edge answers every request for the environment with the maintenance page' }),
    message: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: MAINTENANCE_MESSAGE_MAX }), Type.Null()], {
        description: 'plain text shown on the page (escaped); null or absent: a short default naming the application',
      }),
    ),
    retry_after: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 86400,
        description: `seconds sent in Retry-After (default ${DEFAULT_RETRY_AFTER_SECONDS})`,
      }),
    ),
  },
  { $id: 'EnvironmentMaintenanceBody', additionalProperties: false },
);

export const Maintenance = Type.Object(
  {
    environment: Type.String({ description: 'the environment slug' }),
    enabled: Type.Boolean(),
    message: Type.Union([Type.String(), Type.Null()]),
    retry_after: Type.Union([Type.Integer(), Type.Null()], { description: 'null while maintenance is off' }),
    enabled_by: Type.Union([Type.String(), Type.Null()], { description: 'username of who turned it on' }),
    enabled_at: NullableTimestamp,
  },
  { $id: 'EnvironmentMaintenance' },
);
