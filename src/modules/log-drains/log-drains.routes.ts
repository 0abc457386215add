import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { CreateDrainBody, CreatedLogDrain, DrainParams, LogDrain, OrgParams } from './log-drains.schemas.js';
import type { LogDrainsService } from './log-drains.service.js';

const BASE = '/organizations/:org_slug/log-drains';

/** Log drains of an organization (its admins). */
export function logDrainsRoutes(drains: LogDrainsService) {
  const tags = ['Log drains'];
  return async (app: App) => {
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Ship the runtime, build and deploy logs of the organization (or one application) to a syslog, HTTPS or OTLP receiver',
          description:
            'Every line carries the organization, project, app, environment, release, instance, source and stream. Lines wait in a ' +
            'bounded buffer per drain and are sent in batches; a drain that is down is retried with backoff and never slows the ' +
            'application; lines beyond the buffer (LOG_DRAIN_BUFFER_LINES) are dropped and counted in `lines_dropped`.',
          params: OrgParams,
          body: CreateDrainBody,
          response: { 201: CreatedLogDrain, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await drains.create(currentUser(request).id, request.params.org_slug, request.body)),
    );

    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The organization's log drains, with lines sent and dropped and the last error",
          params: OrgParams,
          response: { 200: Type.Array(LogDrain), ...commonErrorResponses },
        },
      },
      async (request) => drains.list(currentUser(request).id, request.params.org_slug),
    );

    app.get(
      `${BASE}/:drain_id`,
      {
        schema: { tags, summary: 'A log drain and its counts', params: DrainParams, response: { 200: LogDrain, ...commonErrorResponses } },
      },
      async (request) => drains.get(currentUser(request).id, request.params.org_slug, request.params.drain_id),
    );

    app.delete(
      `${BASE}/:drain_id`,
      { schema: { tags, summary: 'Delete a log drain', params: DrainParams, response: { 200: Ok, ...commonErrorResponses } } },
      async (request) => {
        await drains.delete(currentUser(request).id, request.params.org_slug, request.params.drain_id);
        return { ok: true };
      },
    );
  };
}
