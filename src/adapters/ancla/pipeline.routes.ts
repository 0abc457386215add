import { Type } from 'typebox';
import { commonErrorResponses, WorkspaceProjectParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import { PipelineMetrics } from '../../modules/pipeline-status/index.js';
import type { DeploymentsService, EnvDeploysService, PipelineService } from '../../pipeline/index.js';
import { toAnclaDeploy, toAnclaPipelineStatus, toAnclaRun } from './pipeline.mapping.js';
import {
  AnclaDeployEntry,
  AnclaHistoryQuery,
  AnclaPipelineRun,
  AnclaPipelineStatus,
  AnclaPipelineStatusQuery,
  AnclaServiceEnvQuery,
} from './pipeline.schemas.js';

export interface ProjectPipelineDeps {
  scope: OrganizationScope;
  status: PipelineService;
  deployments: DeploymentsService;
  envDeploys: EnvDeploysService;
}

/** `/workspaces/{ws}/projects/{p}/pipeline/...`: one service's pipeline in one environment, in Ancla's words. */
export function pipelineRoutes(deps: ProjectPipelineDeps) {
  const tags = ['Workspaces'];
  const base = '/workspaces/:workspace/projects/:project/pipeline';
  /** The service (an application of the project) and the environment, both checked inside the caller's workspace. */
  const target = async (userId: string, params: { workspace: string; project: string }, query: { service: string; env?: string }) => {
    const { project } = query.env
      ? await deps.scope.environment(userId, params.workspace, params.project, query.env)
      : await deps.scope.project(userId, params.workspace, params.project);
    return (await deps.scope.application(project.id, query.service)).id;
  };
  return async (app: App) => {
    app.get(
      `${base}/status`,
      {
        schema: {
          tags,
          summary:
            "A service's newest build and its deploy in an environment (Ancla's pipeline status; `/applications/{id}/pipeline-status` has every record)",
          params: WorkspaceProjectParams,
          querystring: AnclaPipelineStatusQuery,
          response: { 200: AnclaPipelineStatus, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const applicationId = await target(userId, request.params, request.query);
        return toAnclaPipelineStatus(await deps.status.status(userId, applicationId, request.query.env));
      },
    );

    app.post(
      `${base}/deploy`,
      {
        schema: {
          tags,
          summary: 'Build, release and deploy a service in an environment (an environment deploy of that service; answers at once)',
          params: WorkspaceProjectParams,
          querystring: AnclaServiceEnvQuery,
          response: { 202: AnclaPipelineRun, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const { workspace, project } = request.params;
        await target(userId, request.params, request.query);
        const run = await deps.envDeploys.deploy(userId, workspace, project, request.query.env, request.query.service);
        return reply.code(202).send(toAnclaRun(run));
      },
    );

    app.get(
      `${base}/history`,
      {
        schema: {
          tags,
          summary: "A service's deploys in an environment, newest first",
          params: WorkspaceProjectParams,
          querystring: AnclaHistoryQuery,
          response: { 200: Type.Array(AnclaDeployEntry), ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const applicationId = await target(userId, request.params, request.query);
        const page = await deps.deployments.list(userId, applicationId, {
          environment: request.query.env,
          page: 1,
          per_page: request.query.limit ?? 10,
        });
        return page.items.map(toAnclaDeploy);
      },
    );

    app.get(
      `${base}/metrics`,
      {
        schema: {
          tags,
          summary: "Success rates and durations of a service's last 50 builds, and of its releases and deploys in an environment",
          params: WorkspaceProjectParams,
          querystring: AnclaServiceEnvQuery,
          response: { 200: PipelineMetrics, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const applicationId = await target(userId, request.params, request.query);
        return deps.status.metrics(userId, applicationId, undefined, request.query.env);
      },
    );

    app.post(
      `${base}/rollback`,
      {
        schema: {
          tags,
          summary: 'Redeploy the release that served the environment before the current one (no rebuild)',
          params: WorkspaceProjectParams,
          querystring: AnclaServiceEnvQuery,
          response: { 202: AnclaDeployEntry, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const applicationId = await target(userId, request.params, request.query);
        return reply
          .code(202)
          .send(toAnclaDeploy(await deps.deployments.rollback(userId, applicationId, { environment: request.query.env })));
      },
    );
  };
}
