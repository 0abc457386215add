import type { FastifyReply, FastifyRequest } from 'fastify';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import { lastEventId, SseStream } from '../../platform/http/sse.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { RunIdParams } from '../deployments/index.js';
import { DeploymentIdParams, EnvDeployParams, EventStream, ImageIdParams, sseSchema, StreamQuery } from './streams.schemas.js';
import type { LoggedRecord, StreamsService } from './streams.service.js';

const LINE_EVENTS =
  'Events: `line` `{line, timestamp}` for the log so far and each new line, then `end` `{status, error_detail}` and the server closes. ' +
  'Event ids are line numbers: reconnect with `Last-Event-ID` (or `?last_event_id=`) to resume with no gap and no repeat.';

/** Environment deploys are looked up through their workspace, project and environment (the environments module's access rule). */
export type AuthorizeEnvironmentDeploy = (
  userId: string,
  p: { workspace: string; project: string; env: string; deploy_id: string },
) => Promise<unknown>;

/** The SSE routes of records whose logs other processes write (images, deployments, environment deploys) and application events. */
export function streamsRoutes(streams: StreamsService, authorizeEnvDeploy: AuthorizeEnvironmentDeploy) {
  const tags = ['Streams'];
  const response = { 200: EventStream, ...commonErrorResponses };
  return async (app: App) => {
    const recordLog = (kind: LoggedRecord) => async (request: FastifyRequest, reply: FastifyReply, id: string) => {
      const userId = currentUser(request).id;
      await streams.authorizeRecord(userId, kind, id);
      const stream = new SseStream(request, reply);
      stream.recheck(() => streams.authorizeRecord(userId, kind, id));
      await streams.followRecordLog(stream, kind, id, lastEventId(request));
    };
    const imageLog = recordLog('images');
    const deploymentLog = recordLog('deployments');
    const runLog = recordLog('one_off_runs');

    app.get(
      '/images/:image_id/log/stream',
      {
        schema: {
          tags,
          ...sseSchema("Follow an image's build log", LINE_EVENTS),
          params: ImageIdParams,
          querystring: StreamQuery,
          response,
        },
      },
      async (request, reply) => imageLog(request, reply, request.params.image_id),
    );

    app.get(
      '/deployments/:deployment_id/log/stream',
      {
        schema: {
          tags,
          ...sseSchema("Follow a deployment's log", LINE_EVENTS),
          params: DeploymentIdParams,
          querystring: StreamQuery,
          response,
        },
      },
      async (request, reply) => deploymentLog(request, reply, request.params.deployment_id),
    );

    app.get(
      '/runs/:run_id/log/stream',
      {
        schema: {
          tags,
          params: RunIdParams,
          querystring: StreamQuery,
          response,
          ...sseSchema(
            "Follow a one-off run's output",
            LINE_EVENTS.replace('`end` `{status, error_detail}`', '`end` `{status, exit_code, error_detail}`'),
          ),
        },
      },
      async (request, reply) => runLog(request, reply, request.params.run_id),
    );

    app.get(
      '/workspaces/:workspace/projects/:project/envs/:env/deploys/:deploy_id/log/stream',
      {
        schema: {
          tags,
          params: EnvDeployParams,
          querystring: StreamQuery,
          response,
          ...sseSchema(
            "Follow an environment deploy's services' logs",
            `${LINE_EVENTS} Lines are prefixed with their service; the event id is a cursor per log section.`,
          ),
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const params = request.params;
        await authorizeEnvDeploy(userId, params);
        const stream = new SseStream(request, reply);
        stream.recheck(() => authorizeEnvDeploy(userId, params));
        await streams.followEnvironmentDeploy(stream, params.deploy_id, lastEventId(request), () => authorizeEnvDeploy(userId, params));
      },
    );

    app.get(
      '/applications/:application_id/events',
      {
        schema: {
          tags,
          params: ApplicationIdParams,
          querystring: StreamQuery,
          response,
          ...sseSchema(
            "Follow an application's events",
            'Events named by kind (`image.updated`, `release.updated`, `deployment.updated`, `scale.updated`, ' +
              '`instance.crashed`, `instance.restarted`, `run.updated`), data `{kind, application_id, id, status, at, …}`. Stored: `Last-Event-ID` resumes ' +
              'across reconnects; without it the stream starts from now.',
          ),
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const applicationId = request.params.application_id;
        await streams.authorizeApplication(userId, applicationId);
        const stream = new SseStream(request, reply);
        stream.recheck(() => streams.authorizeApplication(userId, applicationId));
        await streams.followEvents(stream, applicationId, lastEventId(request));
      },
    );
  };
}
