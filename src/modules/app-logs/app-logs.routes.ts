import { commonErrorResponses } from '../../platform/http/schemas.js';
import { lastEventId, SseStream } from '../../platform/http/sse.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { EventStream, sseSchema } from '../streams/index.js';
import { AppLogPage, AppLogQuery, AppLogStreamQuery } from './app-logs.schemas.js';
import type { AppLogsService } from './app-logs.service.js';

/** The stored output of an application's instances: search it, follow it. */
export function appLogsRoutes(logs: AppLogsService) {
  const tags = ['Application logs'];
  return async (app: App) => {
    app.get(
      '/applications/:application_id/logs',
      {
        schema: {
          tags,
          summary: "Search an application's logs: the newest `limit` lines of the window, oldest first",
          params: ApplicationIdParams,
          querystring: AppLogQuery,
          response: { 200: AppLogPage, ...commonErrorResponses },
        },
      },
      async (request) => logs.query(currentUser(request).id, request.params.application_id, request.query),
    );

    app.get(
      '/applications/:application_id/logs/stream',
      {
        schema: {
          tags,
          params: ApplicationIdParams,
          querystring: AppLogStreamQuery,
          response: { 200: EventStream, ...commonErrorResponses },
          ...sseSchema(
            "Follow an application's logs",
            '`event: log` with the same object as the search returns, for each new line (from now on, or after `Last-Event-ID`).',
          ),
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const applicationId = request.params.application_id;
        await logs.authorize(userId, applicationId);
        const stream = new SseStream(request, reply);
        stream.recheck(() => logs.authorize(userId, applicationId));
        await logs.follow(stream, applicationId, request.query.process, lastEventId(request));
      },
    );
  };
}
