import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { DeploymentsService, ImagesService } from '../../pipeline/index.js';
import { toBuildDetail, toBuildLog, toDeploy, toDeployLog } from './services.mapping.js';
import { BuildDetail, BuildIdParams, BuildLog, Deploy, DeployIdParams, DeployLog } from './services.schemas.js';

/**
 * Builds and deploys by id, where Ancla's Python and TypeScript SDKs read them (`/builds/{id}`,
 * `/deploys/{id}/detail`): an image and a deployment, visible to members of their organization.
 */
export function recordsRoutes(deps: { images: ImagesService; deployments: DeploymentsService }) {
  const { images, deployments } = deps;
  const tags = ['Services'];
  return async (app: App) => {
    app.get(
      '/builds/:image_id',
      {
        schema: {
          tags,
          summary: 'A build (an image) by id',
          params: BuildIdParams,
          response: { 200: BuildDetail, ...commonErrorResponses },
        },
      },
      async (request) => toBuildDetail(await images.detail(currentUser(request).id, request.params.image_id)),
    );

    app.get(
      '/builds/:image_id/log',
      {
        schema: {
          tags,
          summary: "A build's log and status, by id",
          params: BuildIdParams,
          response: { 200: BuildLog, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const [image, log] = await Promise.all([
          images.detail(userId, request.params.image_id),
          images.log(userId, request.params.image_id),
        ]);
        return toBuildLog(image, log);
      },
    );

    app.get(
      '/deploys/:deployment_id/detail',
      {
        schema: {
          tags,
          summary: 'A deploy (a deployment) by id',
          params: DeployIdParams,
          response: { 200: Deploy, ...commonErrorResponses },
        },
      },
      async (request) => toDeploy(await deployments.detail(currentUser(request).id, request.params.deployment_id)),
    );

    app.get(
      '/deploys/:deployment_id/log',
      {
        schema: { tags, summary: "A deploy's log, by id", params: DeployIdParams, response: { 200: DeployLog, ...commonErrorResponses } },
      },
      async (request) => toDeployLog(await deployments.log(currentUser(request).id, request.params.deployment_id)),
    );
  };
}
