import { Type } from 'typebox';
import { commonErrorResponses, Slug, WorkspaceProjectParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import { Observability, RangeSchema, type ObservabilityService, type RangeName } from '../../modules/observability/index.js';
import type { OrganizationScope } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';

const AnclaObservabilityQuery = Type.Object({
  service: Type.Optional(Type.String({ ...Slug, description: 'one service; default: every service of the project' })),
  env: Type.Optional(Type.String({ ...Slug, description: 'default: production' })),
  range: Type.Optional({ ...RangeSchema, default: '24h' }),
});

const AnclaObservability = Type.Object(
  {
    range: Type.String(),
    environment: Type.String(),
    services: Type.Array(
      Type.Object({ service: Type.String(), history: Observability.properties.history, requests: Observability.properties.requests }),
    ),
  },
  { $id: 'AnclaObservability' },
);

/** `/workspaces/{ws}/projects/{p}/observability`: each service's resource and request history in one environment. */
export function observabilityRoutes(deps: { scope: OrganizationScope; projects: ProjectsService; observability: ObservabilityService }) {
  return async (app: App) => {
    app.get(
      '/workspaces/:workspace/projects/:project/observability',
      {
        schema: {
          tags: ['Workspaces'],
          summary: "CPU, memory, instances, restarts and the edge's requests of the project's services (or one) in an environment",
          params: WorkspaceProjectParams,
          querystring: AnclaObservabilityQuery,
          response: { 200: AnclaObservability, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        const { workspace, project: projectSlug } = request.params;
        const env = request.query.env ?? 'production';
        const range = (request.query.range ?? '24h') as RangeName;
        const { project } = await deps.scope.environment(userId, workspace, projectSlug, env);
        const slugs = request.query.service
          ? [request.query.service]
          : (await deps.projects.findInOrganization(userId, workspace, projectSlug)).project.applications;
        const services = [];
        for (const slug of slugs) {
          const application = await deps.scope.application(project.id, slug);
          const { range: _range, ...history } = await deps.observability.history(userId, application.id, range, env);
          services.push({ service: slug, ...history });
        }
        return { range, environment: env, services };
      },
    );
  };
}
