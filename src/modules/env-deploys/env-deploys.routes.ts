import { Type } from 'typebox';
import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { DeployQuery, EnvDeploy, EnvDeployLog, EnvDeployParams, EnvDeploysQuery, PromoteBody } from './env-deploys.schemas.js';
import type { EnvDeploysService } from '../../pipeline/index.js';
import { EnvParams } from '../environments/index.js';

const BASE = '/workspaces/:workspace/projects/:project/envs/:env';

/** Deploys of an environment: start one (every service or `?service=`), promote, list, show, log. */
export function envDeploysRoutes(deploys: EnvDeploysService) {
  const tags = ['Environments'];
  const errors = { ...commonErrorResponses, 503: ErrorResponse };
  return async (app: App) => {
    app.post(
      `${BASE}/deploy`,
      {
        schema: {
          tags,
          summary:
            'Build, release and deploy every service of the environment (or `?service=`): answers 202 at once with the env deploy record',
          params: EnvParams,
          querystring: DeployQuery,
          response: { 202: EnvDeploy, ...errors },
        },
      },
      async (request, reply) => {
        const p = request.params;
        return reply
          .code(202)
          .send(await deploys.deploy(currentUser(request).id, p.workspace, p.project, p.env, request.query.service, request.query.ref));
      },
    );

    app.post(
      `${BASE}/promote`,
      {
        schema: {
          tags,
          summary:
            'Promote: deploy here the release (same image, same configuration) that serves each service (or `service`) in `from`, without rebuilding',
          params: EnvParams,
          body: PromoteBody,
          response: { 202: EnvDeploy, ...errors },
        },
      },
      async (request, reply) => {
        const p = request.params;
        return reply.code(202).send(await deploys.promote(currentUser(request).id, p.workspace, p.project, p.env, request.body));
      },
    );

    app.get(
      `${BASE}/deploys`,
      {
        schema: {
          tags,
          summary: "The environment's deploys, newest first (`page`, `per_page`)",
          params: EnvParams,
          querystring: EnvDeploysQuery,
          response: { 200: Type.Array(EnvDeploy), ...errors },
        },
      },
      async (request) => {
        const p = request.params;
        return deploys.list(currentUser(request).id, p.workspace, p.project, p.env, request.query);
      },
    );

    app.get(
      `${BASE}/deploys/:deploy_id`,
      {
        schema: {
          tags,
          summary: "An environment deploy and each service's progress",
          params: EnvDeployParams,
          response: { 200: EnvDeploy, ...errors },
        },
      },
      async (request) => {
        const p = request.params;
        return deploys.detail(currentUser(request).id, p.workspace, p.project, p.env, p.deploy_id);
      },
    );

    app.get(
      `${BASE}/deploys/:deploy_id/log`,
      {
        schema: {
          tags,
          summary: "The services' logs of an environment deploy, merged",
          params: EnvDeployParams,
          response: { 200: EnvDeployLog, ...errors },
        },
      },
      async (request) => {
        const p = request.params;
        return deploys.log(currentUser(request).id, p.workspace, p.project, p.env, p.deploy_id);
      },
    );
  };
}
