import { commonErrorResponses, ErrorResponse, PaginatedEnvironmentQuery } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { invalid } from '../../platform/errors.js';
import { ApplicationIdParams } from '../applications/index.js';
import {
  ChainAccepted,
  ConfigReleaseAccepted,
  DeployAccepted,
  DeployBody,
  DeploymentDetail,
  DeploymentIdParams,
  DeploymentList,
  DeploymentLog,
  DeploymentSummary,
  ReleaseIdParams,
  RollbackBody,
  RollbackPreview,
  RollbackPreviewQuery,
} from './deployments.schemas.js';
import type { DeploymentsService } from '../../pipeline/index.js';
import type { ConfigRelease, DeployChain, ImageDeploys } from '../../pipeline/index.js';

export function deploymentsRoutes(
  deployments: DeploymentsService,
  chain?: DeployChain,
  configRelease?: ConfigRelease,
  imageDeploys?: ImageDeploys,
) {
  const tags = ['Deployments'];
  return async (app: App) => {
    app.post(
      '/releases/:release_id/deploy',
      {
        schema: {
          tags,
          summary: "Deploy a release (queued behind the application's running pipeline jobs; answers at once)",
          params: ReleaseIdParams,
          response: { 202: DeployAccepted, 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(202).send(await deployments.deployRelease(currentUser(request).id, request.params.release_id)),
    );

    if (chain) {
      app.post(
        '/applications/:application_id/deploy',
        {
          schema: {
            tags,
            summary: 'Build the configured branch, create a release and deploy it (one queued job; answers at once)',
            description:
              'With a body naming an `image`: no build; the image (pushed to a registry) is looked up, pinned by its digest, ' +
              'pulled and unpacked, released and deployed under the same isolation as a built image. 404 when the registry has no ' +
              "such image, 403 for another organization's repository in this platform's registry, 422 for a registry not allowed.",
            params: ApplicationIdParams,
            body: DeployBody,
            response: { 202: ChainAccepted, 503: ErrorResponse, ...commonErrorResponses },
          },
        },
        async (request, reply) => {
          const userId = currentUser(request).id;
          const { image, ...rest } = request.body ?? {};
          if (image && imageDeploys) {
            return reply.code(202).send(await imageDeploys.request(userId, request.params.application_id, { image, ...rest }));
          }
          const stray = Object.keys(rest)[0];
          if (stray) throw invalid(stray, 'only an image deploy takes it: name the `image` too');
          const { ok, image_id } = await chain.request(userId, request.params.application_id);
          return reply.code(202).send({ ok, image_id });
        },
      );
    }

    if (configRelease) {
      app.post(
        '/applications/:application_id/config-release',
        {
          schema: {
            tags,
            summary: 'Release the current configuration on the image already built and deploy it (no build)',
            description:
              'For runtime configuration changes: a new release of the newest built image with the configuration as it is now, ' +
              'deployed at once (two queued jobs, no build). 409 when a build-time variable changed since that image was built ' +
              '(`POST /applications/{id}/deploy` rebuilds) or when nothing was built yet.',
            params: ApplicationIdParams,
            response: { 202: ConfigReleaseAccepted, 503: ErrorResponse, ...commonErrorResponses },
          },
        },
        async (request, reply) => reply.code(202).send(await configRelease.request(currentUser(request).id, request.params.application_id)),
      );
    }

    app.post(
      '/applications/:application_id/rollback',
      {
        schema: {
          tags,
          summary: 'Roll back: redeploy an earlier release as it was (its image and frozen configuration, no rebuild)',
          description:
            'Default: the newest older release that once served the environment (production unless `environment`). ' +
            "Answers 202 with the queued deployment (`is_rollback`, `rollback_of`); 409 when the release's image is gone.",
          params: ApplicationIdParams,
          body: RollbackBody,
          response: { 202: DeploymentSummary, 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await deployments.rollback(currentUser(request).id, request.params.application_id, request.body)),
    );

    app.get(
      '/applications/:application_id/rollback/preview',
      {
        schema: {
          tags,
          summary: 'What a rollback would do: the release serving, the one it goes back to, and the data it does not undo',
          description:
            'The same choice of release as `POST …/rollback` with the same query, nothing changed. `restore_offers` names each ' +
            'attached Postgres add-on a release being undone migrated, with the restore point taken before it.',
          params: ApplicationIdParams,
          querystring: RollbackPreviewQuery,
          response: { 200: RollbackPreview, ...commonErrorResponses },
        },
      },
      async (request) => deployments.previewRollback(currentUser(request).id, request.params.application_id, request.query),
    );

    app.post(
      '/deployments/:deployment_id/cancel',
      {
        schema: {
          tags,
          summary: 'Cancel a deployment: a queued one leaves the queue, a running one stops and the previous release keeps serving',
          description: 'Answers 202 with the deployment (`error_code` `cancelled` once settled); 409 when it has already finished.',
          params: DeploymentIdParams,
          response: { 202: DeploymentSummary, 503: ErrorResponse, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(202).send(await deployments.cancel(currentUser(request), request.params.deployment_id)),
    );

    app.get(
      '/applications/:application_id/deployments',
      {
        schema: {
          tags,
          summary: "The application's deployments in every environment (or `?environment=<slug>`), newest first",
          params: ApplicationIdParams,
          querystring: PaginatedEnvironmentQuery,
          response: { 200: DeploymentList, ...commonErrorResponses },
        },
      },
      async (request) => deployments.list(currentUser(request).id, request.params.application_id, request.query),
    );

    app.get(
      '/deployments/:deployment_id/detail',
      {
        schema: { tags, summary: 'A deployment', params: DeploymentIdParams, response: { 200: DeploymentDetail, ...commonErrorResponses } },
      },
      async (request) => deployments.detail(currentUser(request).id, request.params.deployment_id),
    );

    app.get(
      '/deployments/:deployment_id/log',
      {
        schema: {
          tags,
          summary: "A deployment's log and step",
          params: DeploymentIdParams,
          response: { 200: DeploymentLog, ...commonErrorResponses },
        },
      },
      async (request) => deployments.log(currentUser(request).id, request.params.deployment_id),
    );
  };
}
