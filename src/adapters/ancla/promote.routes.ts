import { commonErrorResponses, WorkspaceProjectParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { DeploymentsService, EnvDeploysService, ReleasesService } from '../../pipeline/index.js';
import { toAnclaRun } from './pipeline.mapping.js';
import { AnclaPipelineRun } from './pipeline.schemas.js';
import { configurationDiff, toServingRelease } from './promote.mapping.js';
import { AnclaPromoteBody, AnclaPromotePreview, AnclaPromotePreviewQuery } from './promote.schemas.js';

/** `/workspaces/{ws}/projects/{p}/promote`: Ancla's promotion between two environments of a project. */
export function promoteRoutes(deps: {
  scope: OrganizationScope;
  deployments: DeploymentsService;
  releases: ReleasesService;
  envDeploys: EnvDeploysService;
}) {
  const tags = ['Workspaces'];
  return async (app: App) => {
    app.post(
      '/workspaces/:workspace/projects/:project/promote',
      {
        schema: {
          tags,
          summary:
            'Deploy into target_env the release (same build, its frozen configuration) each service (or one) serves in source_env, without rebuilding',
          params: WorkspaceProjectParams,
          body: AnclaPromoteBody,
          response: { 201: AnclaPipelineRun, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { workspace, project } = request.params;
        const { source_env, target_env, service, configuration } = request.body;
        const run = await deps.envDeploys.promote(currentUser(request).id, workspace, project, target_env, {
          from: source_env,
          ...(service === undefined ? {} : { service }),
          ...(configuration === undefined ? {} : { configuration }),
        });
        return reply.code(201).send(toAnclaRun(run));
      },
    );

    app.get(
      '/workspaces/:workspace/projects/:project/promote/preview',
      {
        schema: {
          tags,
          summary: 'What promoting a service would ship: the releases source and target serve now and the configuration names that change',
          params: WorkspaceProjectParams,
          querystring: AnclaPromotePreviewQuery,
          response: { 200: AnclaPromotePreview, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const { workspace, project: projectSlug } = request.params;
        const { service, source_env, target_env } = request.query;
        const source = await deps.scope.environment(userId, workspace, projectSlug, source_env);
        const target = await deps.scope.environment(userId, workspace, projectSlug, target_env);
        const application = await deps.scope.application(source.project.id, service);
        const serving = async (environmentId: string) => {
          const current = await deps.deployments.currentRelease(application.id, environmentId);
          return current ? deps.releases.detail(userId, current.id) : null;
        };
        const [from, to] = await Promise.all([serving(source.environment.id), serving(target.environment.id)]);
        return {
          service: application.slug,
          source_env,
          target_env,
          source: toServingRelease(from),
          target: toServingRelease(to),
          can_promote: from !== null && source_env !== target_env,
          same_build: Boolean(from?.image && from.image.id === to?.image?.id),
          configuration: configurationDiff(from?.configuration ?? [], to?.configuration ?? []),
        };
      },
    );
  };
}
