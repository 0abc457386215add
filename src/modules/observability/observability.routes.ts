import { Type } from 'typebox';
import { commonErrorResponses, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../auth/index.js';
import { ApplicationIdParams } from '../applications/index.js';
import { RANGES, type ObservabilityService, type RangeName } from './observability.service.js';

const RangeSchema = Type.Union(Object.keys(RANGES).map((r) => Type.Literal(r)), { default: '1h' });

const Observability = Type.Object({
  range: Type.String(),
  history: Type.Array(Type.Object({
    timestamp: Timestamp,
    cpu_usage_m: Type.Integer({ description: 'millicores (1000 = one core), average over the bucket' }),
    memory_usage_bytes: Type.Integer({ description: 'resident memory of all instances, average over the bucket' }),
    pod_count: Type.Integer({ description: 'running instances' }),
    restart_count: Type.Integer({ description: 'crash restarts of the running instances' }),
  })),
}, { $id: 'Observability' });

export function observabilityRoutes(observability: ObservabilityService) {
  return async (app: App) => {
    app.get('/applications/:application_id/observability', {
      schema: {
        tags: ['Applications'], summary: 'CPU, memory, instance and restart history of the production processes (at most 200 points)',
        params: ApplicationIdParams, querystring: Type.Object({ range: Type.Optional(RangeSchema) }, { additionalProperties: false }),
        response: { 200: Observability, ...commonErrorResponses },
      },
    }, async (request) => observability.history(currentUser(request).id, request.params.application_id, (request.query.range ?? '1h') as RangeName));
  };
}
