import { Type } from 'typebox';
import { AppError } from '../../platform/errors.js';
import { commonErrorResponses, ErrorResponse } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ApplicationsService } from '../../modules/applications/index.js';
import { DeployQuery, EnvDeploy, EnvDeployLog, EnvDeployParams, EnvDeploysQuery } from '../../modules/env-deploys/index.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { DeploymentsService, EnvDeploysService } from '../../pipeline/index.js';
import { deploymentAsEnvDeploy, toDeployLog } from './services.mapping.js';
import { EnvParams } from './services.schemas.js';

const BASE = '/workspaces/:workspace/projects/:project/envs/:env';

/**
 * An environment's deploys: start one (every service or `?service=`), list, show, log. An id
 * is an environment deploy's or, as Ancla's CLI sends them, one of the environment's
 * deployments (the ids a service's deploy list shows), seen as a one-service deploy.
 */
export function envDeploysRoutes(deps: {
  deploys: EnvDeploysService;
  deployments: DeploymentsService;
  apps: ApplicationsService;
  scope: OrganizationScope;
}) {
  const { deploys, deployments, apps, scope } = deps;
  const tags = ['Environments'];
  const errors = { ...commonErrorResponses, 503: ErrorResponse };

  /** The deployment of id `id` in this environment, when it is not an environment deploy's id. */
  async function deploymentHere(userId: string, p: { workspace: string; project: string; env: string }, id: string) {
    const { environment } = await scope.environment(userId, p.workspace, p.project, p.env);
    const d = await deployments.detail(userId, id).catch((err: unknown) => {
      throw err instanceof AppError && err.kind === 'NOT_FOUND' ? new AppError('NOT_FOUND', 'Environment deploy not found') : err;
    });
    if (d.environment_id !== environment.id) throw new AppError('NOT_FOUND', 'Environment deploy not found');
    return d;
  }
  const isNotFound = (err: unknown) => err instanceof AppError && err.kind === 'NOT_FOUND';

  return async (app: App) => {
    app.post(
      `${BASE}/deploy`,
      {
        schema: {
          tags,
          summary:
            'Build, release and deploy every service of the environment (or `?service=`): answers 202 at once with the env deploy record and its `job_id`',
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
          summary: "An environment deploy and each service's progress (or one of the environment's deployments, as a one-service deploy)",
          params: EnvDeployParams,
          response: { 200: EnvDeploy, ...errors },
        },
      },
      async (request) => {
        const p = request.params;
        const userId = currentUser(request).id;
        try {
          return await deploys.detail(userId, p.workspace, p.project, p.env, p.deploy_id);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          const d = await deploymentHere(userId, p, p.deploy_id);
          const service = await apps.authorize(userId, d.application_id);
          return deploymentAsEnvDeploy({ ...d, application_slug: service.slug });
        }
      },
    );

    app.get(
      `${BASE}/deploys/:deploy_id/log`,
      {
        schema: {
          tags,
          summary: "The services' logs of an environment deploy, merged (or one deployment's log)",
          params: EnvDeployParams,
          response: { 200: EnvDeployLog, ...errors },
        },
      },
      async (request) => {
        const p = request.params;
        const userId = currentUser(request).id;
        try {
          return await deploys.log(userId, p.workspace, p.project, p.env, p.deploy_id);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          await deploymentHere(userId, p, p.deploy_id);
          const log = toDeployLog(await deployments.log(userId, p.deploy_id));
          return { ...log, error_detail: log.error_detail || null };
        }
      },
    );
  };
}
