import { commonErrorResponses, EnvironmentQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { MetricsQuery, PipelineMetrics, PipelineStatus } from './pipeline.schemas.js';
import type { PipelineService } from '../../pipeline/index.js';

export function pipelineRoutes(pipeline: PipelineService) {
  const tags = ['Applications'];
  return async (app: App) => {
    app.get(
      '/applications/:application_id/pipeline-status',
      {
        schema: {
          tags,
          summary: 'The latest build, release and deployment (in any environment, or `?environment=<slug>`)',
          params: ApplicationIdParams,
          querystring: EnvironmentQuery,
          response: { 200: PipelineStatus, ...commonErrorResponses },
        },
      },
      async (request) => pipeline.status(currentUser(request).id, request.params.application_id, request.query.environment),
    );

    app.get(
      '/applications/:application_id/pipeline-metrics',
      {
        schema: {
          tags,
          summary: 'Success rates and durations of the last `range` builds, releases and deployments',
          params: ApplicationIdParams,
          querystring: MetricsQuery,
          response: { 200: PipelineMetrics, ...commonErrorResponses },
        },
      },
      async (request) => pipeline.metrics(currentUser(request).id, request.params.application_id, request.query.range),
    );
  };
}
