import { Type } from 'typebox';
import type { AppContext } from '../../platform/context.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { requireSiteAdmin } from '../../platform/http/principal.js';
import { OrgSlugParams } from './organizations.schemas.js';
import type { OrganizationsService } from './organizations.service.js';

/** The build timeout of an application's organization: its own when an operator set one, else the configured default. */
export async function buildTimeoutSeconds(ctx: AppContext, applicationId: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('applications')
    .innerJoin('projects', 'projects.id', 'applications.project_id')
    .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
    .select('organizations.build_timeout_seconds')
    .where('applications.id', '=', applicationId)
    .executeTakeFirst();
  return row?.build_timeout_seconds ?? ctx.config.BUILD_TIMEOUT_SECONDS;
}

const PipelineLimits = Type.Object({
  /** The organization's own build timeout; null: the configured default. */
  build_timeout_seconds: Type.Union([Type.Integer({ minimum: 10, maximum: 86_400 }), Type.Null()]),
  /** What its builds get now. */
  effective_build_timeout_seconds: Type.Integer(),
});
const PipelineLimitsBody = Type.Object(
  {
    build_timeout_seconds: Type.Union([Type.Integer({ minimum: 10, maximum: 86_400 }), Type.Null()]),
  },
  { additionalProperties: false },
);

/** Operator controls over one organization's share of the pipeline (site administrators only). */
export function pipelineLimitsRoutes(organizations: OrganizationsService, defaultBuildTimeoutSeconds: number) {
  const tags = ['Organizations'];
  const view = (own: number | null) => ({
    build_timeout_seconds: own,
    effective_build_timeout_seconds: own ?? defaultBuildTimeoutSeconds,
  });
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/pipeline-limits',
      {
        schema: {
          tags,
          summary: "An organization's pipeline limits (site admins)",
          params: OrgSlugParams,
          response: { 200: PipelineLimits, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return view(await organizations.buildTimeout(request.params.org_slug));
      },
    );

    app.put(
      '/organizations/:org_slug/pipeline-limits',
      {
        schema: {
          tags,
          summary: "Set an organization's build timeout (site admins; null: the default)",
          params: OrgSlugParams,
          body: PipelineLimitsBody,
          response: { 200: PipelineLimits, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return view(await organizations.setBuildTimeout(request.params.org_slug, request.body.build_timeout_seconds));
      },
    );
  };
}
