import { commonErrorResponses, WorkspaceProjectParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { PipelineService } from '../../pipeline/index.js';
import { toAnclaPipelineStatus } from './pipeline.mapping.js';
import { AnclaPipelineStatus, AnclaPipelineStatusQuery } from './pipeline.schemas.js';

/** `/workspaces/{ws}/projects/{p}/pipeline/...`: a project's services' pipelines in Ancla's words. */
export function pipelineRoutes(deps: { scope: OrganizationScope; status: PipelineService }) {
  const tags = ['Workspaces'];
  return async (app: App) => {
    app.get(
      '/workspaces/:workspace/projects/:project/pipeline/status',
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
        const { workspace, project: projectSlug } = request.params;
        const { env, service } = request.query;
        // The environment, when named, must be the project's (404 otherwise), as the service must.
        const { project } = env
          ? await deps.scope.environment(userId, workspace, projectSlug, env)
          : await deps.scope.project(userId, workspace, projectSlug);
        const application = await deps.scope.application(project.id, service);
        return toAnclaPipelineStatus(await deps.status.status(userId, application.id, env));
      },
    );
  };
}
