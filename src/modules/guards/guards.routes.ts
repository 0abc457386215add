import { Type } from 'typebox';
import { commonErrorResponses, Id, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../auth/index.js';
import { ApplicationIdParams } from '../applications/index.js';
import { GuardSettingsSchema } from '../deployments/index.js';
import type { GuardsService } from './guards.service.js';

const EnvironmentQuery = Type.Object(
  { environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })) },
  { additionalProperties: false },
);

const Guard = Type.Object({ environment_id: Id, ...GuardSettingsSchema.properties, updated: Timestamp }, { $id: 'Guard' });

const GuardBody = Type.Object(
  {
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })),
    window_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'default 300 (5 minutes)' })),
    max_error_ratio: Type.Optional(Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1 }), Type.Null()])),
    max_p95_factor: Type.Optional(Type.Union([Type.Number({ minimum: 1 }), Type.Null()])),
    max_restarts: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    min_requests: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'default 20' })),
  },
  { additionalProperties: false },
);

export function guardsRoutes(guards: GuardsService) {
  return async (app: App) => {
    app.get(
      '/applications/:application_id/guard',
      {
        schema: {
          tags: ['Applications'],
          summary: "The environment's guard: after a deployment completes it is watched, and rolled back on a breach",
          params: ApplicationIdParams,
          querystring: EnvironmentQuery,
          response: { 200: Guard, ...commonErrorResponses },
        },
      },
      async (request) => guards.get(currentUser(request).id, request.params.application_id, request.query.environment),
    );
    app.put(
      '/applications/:application_id/guard',
      {
        schema: {
          tags: ['Applications'],
          summary: "Sets the environment's guard (replaces it whole; at least one threshold)",
          params: ApplicationIdParams,
          body: GuardBody,
          response: { 200: Guard, ...commonErrorResponses },
        },
      },
      async (request) => guards.put(currentUser(request).id, request.params.application_id, request.body),
    );
    app.delete(
      '/applications/:application_id/guard',
      {
        schema: {
          tags: ['Applications'],
          summary: "Removes the environment's guard (deployments already under watch keep theirs)",
          params: ApplicationIdParams,
          querystring: EnvironmentQuery,
          response: { 200: Type.Object({ ok: Type.Boolean() }), ...commonErrorResponses },
        },
      },
      async (request) => guards.remove(currentUser(request).id, request.params.application_id, request.query.environment),
    );
  };
}
