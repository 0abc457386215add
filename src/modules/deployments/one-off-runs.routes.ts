import { commonErrorResponses, ErrorResponse, PaginationQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { Run, RunBody, RunIdParams, RunList, RunLog } from './one-off-runs.schemas.js';
import type { OneOffRunsService } from '../../pipeline/index.js';

/** One-off runs: a command in the serving release (as `heroku run`, but durable and non-interactive). */
export function oneOffRunsRoutes(runs: OneOffRunsService) {
  const tags = ['Runs'];
  return async (app: App) => {
    app.post(
      '/applications/:application_id/runs',
      {
        schema: {
          tags,
          summary: "Run a command once in the serving release's image and configuration (a queued job; answers at once)",
          params: ApplicationIdParams,
          body: RunBody,
          response: { 202: Run, 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await runs.create(currentUser(request).id, request.params.application_id, request.body)),
    );

    app.get(
      '/applications/:application_id/runs',
      {
        schema: {
          tags,
          summary: "The application's one-off runs, newest first",
          params: ApplicationIdParams,
          querystring: PaginationQuery,
          response: { 200: RunList, ...commonErrorResponses },
        },
      },
      async (request) => runs.list(currentUser(request).id, request.params.application_id, request.query),
    );

    app.get(
      '/runs/:run_id',
      {
        schema: { tags, summary: 'A one-off run', params: RunIdParams, response: { 200: Run, ...commonErrorResponses } },
      },
      async (request) => runs.detail(currentUser(request).id, request.params.run_id),
    );

    app.get(
      '/runs/:run_id/log',
      {
        schema: {
          tags,
          summary: "A one-off run's output (secret values scrubbed)",
          params: RunIdParams,
          response: { 200: RunLog, ...commonErrorResponses },
        },
      },
      async (request) => runs.log(currentUser(request).id, request.params.run_id),
    );
  };
}
