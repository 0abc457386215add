import { commonErrorResponses, ErrorResponse, PaginationQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { AttachedRunQuery, Run, RunBody, RunIdParams, RunList, RunLog, RunStream } from './one-off-runs.schemas.js';
import type { OneOffRunsService } from '../../pipeline/index.js';
import { attachedRunStreams } from './attached-run.route.js';

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

    const attached = attachedRunStreams(app, runs);
    app.post(
      '/applications/:application_id/runs/attach',
      {
        schema: {
          tags,
          summary: 'Run a command once in the serving release with your standard input and output attached (what `slipway run` does)',
          description:
            "The request body (`application/octet-stream`, chunked) is the command's standard input, its end the input's end; " +
            'the response streams its output and ends with its exit status. With `tty=true` it runs under a pseudo-terminal. ' +
            'Served by a process that runs applications on the local runtime; elsewhere answers 409 (queue the run instead).',
          produces: ['application/vnd.slipway.run-stream'],
          params: ApplicationIdParams,
          querystring: AttachedRunQuery,
          response: { 200: RunStream, ...commonErrorResponses },
        },
      },
      async (request, reply) => attached.serve(request, reply, currentUser(request).id, request.params.application_id, request.query),
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
