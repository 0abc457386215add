import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { ApplicationIdParams } from '../applications/index.js';
import { CreateVolumeBody, ResizeVolumeBody, Volume, VolumeChange, VolumeParams, VolumeQuery } from './volumes.schemas.js';
import type { VolumesService } from './volumes.service.js';

const BASE = '/applications/:application_id/volumes';

/** An application's persistent volumes (per environment; production when none is named). `:volume` is an id or a name. */
export function volumesRoutes(volumes: VolumesService) {
  const tags = ['Volumes'];
  return async (app: App) => {
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The application's volumes with their usage (every environment's, or ?environment=)",
          params: ApplicationIdParams,
          querystring: VolumeQuery,
          response: { 200: Type.Array(Volume), ...commonErrorResponses },
        },
      },
      async (request) => volumes.list(currentUser(request).id, request.params.application_id, request.query.environment),
    );
    app.post(
      BASE,
      {
        schema: {
          tags,
          summary:
            'Create a volume mounted at a path in one process type (web); the current release is redeployed stop-then-start to mount it. 409 on a name or path taken, 422 on a system path or a process type scaled above 1',
          params: ApplicationIdParams,
          body: CreateVolumeBody,
          response: { 201: VolumeChange, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await volumes.create(currentUser(request).id, request.params.application_id, request.body)),
    );
    app.get(
      `${BASE}/:volume`,
      {
        schema: {
          tags,
          summary: 'A volume: size, mount path, usage',
          params: VolumeParams,
          querystring: VolumeQuery,
          response: { 200: Volume, ...commonErrorResponses },
        },
      },
      async (request) =>
        volumes.show(currentUser(request).id, request.params.application_id, request.params.volume, request.query.environment),
    );
    app.patch(
      `${BASE}/:volume`,
      {
        schema: {
          tags,
          summary: 'Grow a volume: the current release is redeployed stop-then-start and the disk grows between; 422 on a smaller size',
          params: VolumeParams,
          querystring: VolumeQuery,
          body: ResizeVolumeBody,
          response: { 200: VolumeChange, ...commonErrorResponses },
        },
      },
      async (request) =>
        volumes.resize(
          currentUser(request).id,
          request.params.application_id,
          request.params.volume,
          request.body.size_mib,
          request.query.environment,
        ),
    );
    app.delete(
      `${BASE}/:volume`,
      {
        schema: {
          tags,
          summary: 'Delete a volume and its data: the current release is redeployed without it',
          params: VolumeParams,
          querystring: VolumeQuery,
          response: { 200: VolumeChange, ...commonErrorResponses },
        },
      },
      async (request) =>
        volumes.remove(currentUser(request).id, request.params.application_id, request.params.volume, request.query.environment),
    );
  };
}
