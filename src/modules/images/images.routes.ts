import { commonErrorResponses, ErrorResponse, PaginationQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { ApplicationIdParams } from '../applications/index.js';
import { currentUser } from '../../platform/http/principal.js';
import { BuildAccepted, BuildBody, BuildLogSchema, ImageDetail, ImageIdParams, ImageList } from './images.schemas.js';
import type { ImagesService } from '../../pipeline/index.js';

export function imagesRoutes(images: ImagesService) {
  const tags = ['Images'];
  return async (app: App) => {
    app.get(
      '/images/:application_id',
      {
        schema: {
          tags,
          summary: "An application's images, newest first",
          params: ApplicationIdParams,
          querystring: PaginationQuery,
          response: { 200: ImageList, ...commonErrorResponses },
        },
      },
      async (request) => images.list(currentUser(request).id, request.params.application_id, request.query),
    );

    app.get(
      '/images/:image_id/detail',
      {
        schema: { tags, summary: 'An image', params: ImageIdParams, response: { 200: ImageDetail, ...commonErrorResponses } },
      },
      async (request) => images.detail(currentUser(request).id, request.params.image_id),
    );

    app.get(
      '/images/:image_id/log',
      {
        schema: {
          tags,
          summary: "An image's build log and progress",
          params: ImageIdParams,
          response: { 200: BuildLogSchema, ...commonErrorResponses },
        },
      },
      async (request) => images.log(currentUser(request).id, request.params.image_id),
    );

    app.post(
      '/images/:application_id/build',
      {
        schema: {
          tags,
          summary: 'Build the application from its repository (answers at once; follow the image log)',
          params: ApplicationIdParams,
          body: BuildBody,
          response: { 202: BuildAccepted, ...commonErrorResponses, 503: ErrorResponse },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await images.requestBuild(currentUser(request).id, request.params.application_id, request.body?.ref)),
    );
  };
}
