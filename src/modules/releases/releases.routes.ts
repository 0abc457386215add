import { commonErrorResponses, ErrorResponse, PaginatedEnvironmentQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { ReleaseAccepted, ReleaseDetail, ReleaseIdParams, ReleaseList, ReleaseLog } from './releases.schemas.js';
import type { ReleasesService } from '../../pipeline/index.js';

/** `POST /releases/{release_id}/deploy` lives in the deployments module. */
export function releasesRoutes(releases: ReleasesService) {
  const tags = ['Releases'];
  return async (app: App) => {
    app.get(
      '/releases/:application_id',
      {
        schema: {
          tags,
          summary: "An application's releases in every environment (or `?environment=<slug>`), newest first",
          params: ApplicationIdParams,
          querystring: PaginatedEnvironmentQuery,
          response: { 200: ReleaseList, ...commonErrorResponses },
        },
      },
      async (request) => releases.list(currentUser(request).id, request.params.application_id, request.query),
    );

    app.get(
      '/releases/:release_id/detail',
      {
        schema: {
          tags,
          summary: 'A release: its image, frozen configuration (secrets masked) and changes',
          params: ReleaseIdParams,
          response: { 200: ReleaseDetail, ...commonErrorResponses },
        },
      },
      async (request) => releases.detail(currentUser(request).id, request.params.release_id),
    );

    app.get(
      '/releases/:release_id/log',
      {
        schema: {
          tags,
          summary: "A release's log and progress",
          params: ReleaseIdParams,
          response: { 200: ReleaseLog, ...commonErrorResponses },
        },
      },
      async (request) => releases.log(currentUser(request).id, request.params.release_id),
    );

    app.post(
      '/releases/:application_id/create',
      {
        schema: {
          tags,
          summary: 'Create a release from the latest built image and the current configuration (answers at once; follow the release log)',
          params: ApplicationIdParams,
          response: { 202: ReleaseAccepted, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request, reply) => reply.code(202).send(await releases.requestRelease(currentUser(request).id, request.params.application_id)),
    );
  };
}
