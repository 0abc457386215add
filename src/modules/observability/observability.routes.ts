import { Type } from 'typebox';
import { commonErrorResponses, EnvironmentQuery, Timestamp } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ApplicationIdParams } from '../applications/index.js';
import { RANGES, type ObservabilityService, type RangeName } from './observability.service.js';

const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

export const RangeSchema = Type.Union(
  Object.keys(RANGES).map((r) => Type.Literal(r)),
  { default: '1h' },
);

export const Observability = Type.Object(
  {
    range: Type.String(),
    history: Type.Array(
      Type.Object({
        timestamp: Timestamp,
        cpu_usage_m: Type.Integer({ description: 'millicores (1000 = one core), average over the bucket' }),
        memory_usage_bytes: Type.Integer({ description: 'resident memory of all instances, average over the bucket' }),
        pod_count: Type.Integer({ description: 'running instances' }),
        restart_count: Type.Integer({ description: 'crash restarts of the running instances' }),
      }),
    ),
    requests: Type.Array(
      Type.Object({
        timestamp: Timestamp,
        process_type: Type.String(),
        requests: Type.Integer(),
        requests_per_second: Type.Number({ description: 'requests over the bucket divided by its length' }),
        status: Type.Object({
          '1xx': Type.Integer(),
          '2xx': Type.Integer(),
          '3xx': Type.Integer(),
          '4xx': Type.Integer(),
          '5xx': Type.Integer(),
        }),
        latency_ms: Type.Object(
          { p50: NullableNumber, p95: NullableNumber, p99: NullableNumber },
          { description: "read off the edge's latency histogram (linear within a bucket)" },
        ),
      }),
      { description: "The edge's requests per process type in buckets of at least a minute (at most 200 per process type)" },
    ),
  },
  { $id: 'Observability' },
);

const RequestMinute = Type.Object(
  {
    minute: Timestamp,
    environment: Type.String(),
    process_type: Type.String(),
    requests: Type.Integer(),
    status: Type.Object({
      '1xx': Type.Integer(),
      '2xx': Type.Integer(),
      '3xx': Type.Integer(),
      '4xx': Type.Integer(),
      '5xx': Type.Integer(),
    }),
    latency: Type.Object({
      bounds_ms: Type.Array(Type.Number(), { description: 'upper bound of each bucket; the last bucket counts slower requests' }),
      buckets: Type.Array(Type.Integer()),
      mean_ms: Type.Number(),
    }),
  },
  { $id: 'RequestMinute' },
);

const Instance = Type.Object(
  {
    id: Type.String(),
    name: Type.String({ description: '`<process type>.<ordinal>`, e.g. `web.1`' }),
    process_type: Type.String(),
    state: Type.Union(
      [Type.Literal('starting'), Type.Literal('healthy'), Type.Literal('running'), Type.Literal('crashed'), Type.Literal('stopped')],
      { description: '`healthy`: a web instance passing its health check; `running`: a process without one' },
    ),
    restarts: Type.Integer({ description: 'times it was restarted after exiting on its own' }),
    last_exit: Type.Union([Type.String(), Type.Null()], {
      description: 'why it last stopped on its own, e.g. `OOM: exceeded 384 MiB of m1.small`',
    }),
    release_version: Type.Union([Type.Integer(), Type.Null()]),
    started_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Instance' },
);

export function observabilityRoutes(observability: ObservabilityService) {
  return async (app: App) => {
    app.get(
      '/applications/:application_id/instances',
      {
        schema: {
          tags: ['Applications'],
          summary: "The application's instances in an environment (production by default): state, restarts, why each last exited",
          params: ApplicationIdParams,
          querystring: EnvironmentQuery,
          response: { 200: Type.Array(Instance), ...commonErrorResponses },
        },
      },
      async (request) => observability.instances(currentUser(request).id, request.params.application_id, request.query.environment),
    );

    app.get(
      '/applications/:application_id/observability/requests',
      {
        schema: {
          tags: ['Applications'],
          summary: 'Requests the edge served, per minute, environment and process type: status classes and a latency histogram',
          params: ApplicationIdParams,
          querystring: Type.Object(
            { minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440, default: 60 })) },
            { additionalProperties: false },
          ),
          response: { 200: Type.Array(RequestMinute), ...commonErrorResponses },
        },
      },
      async (request) => observability.requests(currentUser(request).id, request.params.application_id, request.query.minutes ?? 60),
    );

    app.get(
      '/applications/:application_id/observability',
      {
        schema: {
          tags: ['Applications'],
          summary:
            'CPU, memory, instance and restart history of the production processes (at most 200 points), and their requests at the edge',
          params: ApplicationIdParams,
          querystring: Type.Object({ range: Type.Optional(RangeSchema) }, { additionalProperties: false }),
          response: { 200: Observability, ...commonErrorResponses },
        },
      },
      async (request) =>
        observability.history(currentUser(request).id, request.params.application_id, (request.query.range ?? '1h') as RangeName),
    );
  };
}
