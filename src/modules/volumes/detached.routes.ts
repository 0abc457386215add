import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { AttachVolumeBody, OrganizationVolumeParams, Volume, VolumeChange } from './volumes.schemas.js';
import type { DetachedVolumesService } from './detached.service.js';

const BASE = '/organizations/:org_slug/volumes/detached';

/** Volumes of deleted applications (or environments): listed by the organization, re-attached or deleted by its admins. */
export function detachedVolumesRoutes(detached: DetachedVolumesService) {
  const tags = ['Volumes'];
  return async (app: App) => {
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: 'Volumes whose application or environment was deleted: their data stays, and they count in the disk quota',
          params: Type.Object({ org_slug: OrganizationVolumeParams.properties.org_slug }),
          response: { 200: Type.Array(Volume), ...commonErrorResponses },
        },
      },
      async (request) => detached.list(currentUser(request).id, request.params.org_slug),
    );
    app.post(
      `${BASE}/:volume_id/attach`,
      {
        schema: {
          tags,
          summary:
            "Mount a detached volume in another application of the organization (its files become that application's); the environment is redeployed stop-then-start. 409 on a name or path taken there",
          params: OrganizationVolumeParams,
          body: AttachVolumeBody,
          response: { 200: VolumeChange, ...commonErrorResponses },
        },
      },
      async (request) => detached.attach(currentUser(request).id, request.params.org_slug, request.params.volume_id, request.body),
    );
    app.delete(
      `${BASE}/:volume_id`,
      {
        schema: {
          tags,
          summary: 'Delete a detached volume and its data (an attached one is deleted through its application)',
          params: OrganizationVolumeParams,
          response: { 200: Volume, ...commonErrorResponses },
        },
      },
      async (request) => detached.remove(currentUser(request).id, request.params.org_slug, request.params.volume_id),
    );
  };
}
