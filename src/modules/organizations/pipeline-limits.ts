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

const DiskQuotaMb = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000_000 }), Type.Null()]);
const PipelineLimits = Type.Object(
  {
    /** The organization's own build timeout; null: the configured default. */
    build_timeout_seconds: Type.Union([Type.Integer({ minimum: 10, maximum: 86_400 }), Type.Null()]),
    /** What its builds get now. */
    effective_build_timeout_seconds: Type.Integer(),
    /** The organization's own disk quota in MiB; null: the configured default (ORG_DISK_QUOTA_MB). */
    disk_quota_mb: DiskQuotaMb,
    /** The quota its new builds are held to now (MiB; null: none). */
    effective_disk_quota_mb: Type.Union([Type.Integer(), Type.Null()]),
    /** Whether its builds, one-off commands and instances may connect out (the internet); null: the site's SANDBOX_OUTBOUND. */
    outbound: Type.Union([Type.Boolean(), Type.Null()]),
    /** What its sandboxes get now (the platform's loopback services and other instances stay unreachable either way). */
    effective_outbound: Type.Boolean(),
  },
  { $id: 'PipelineLimits' },
);
const PipelineLimitsBody = Type.Object(
  {
    build_timeout_seconds: Type.Optional(Type.Union([Type.Integer({ minimum: 10, maximum: 86_400 }), Type.Null()])),
    disk_quota_mb: Type.Optional(DiskQuotaMb),
    outbound: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** Operator controls over one organization's share of the pipeline, the disk and its sandboxes' network (site administrators only). */
export function pipelineLimitsRoutes(
  organizations: OrganizationsService,
  defaults: { buildTimeoutSeconds: number; diskQuotaMb: number; outbound: boolean },
) {
  const tags = ['Organizations'];
  const view = async (slug: string) => {
    const [timeout, quota, outbound] = await Promise.all([
      organizations.buildTimeout(slug),
      organizations.diskQuota(slug),
      organizations.sandboxOutbound(slug),
    ]);
    return {
      build_timeout_seconds: timeout,
      effective_build_timeout_seconds: timeout ?? defaults.buildTimeoutSeconds,
      disk_quota_mb: quota,
      effective_disk_quota_mb: quota ?? (defaults.diskQuotaMb > 0 ? defaults.diskQuotaMb : null),
      outbound,
      effective_outbound: outbound ?? defaults.outbound,
    };
  };
  return async (app: App) => {
    app.get(
      '/organizations/:org_slug/pipeline-limits',
      {
        schema: {
          tags,
          summary: "An organization's pipeline limits, disk quota and outbound network (site admins)",
          params: OrgSlugParams,
          response: { 200: PipelineLimits, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return view(request.params.org_slug);
      },
    );

    app.put(
      '/organizations/:org_slug/pipeline-limits',
      {
        schema: {
          tags,
          summary:
            "Set an organization's build timeout, disk quota and outbound network (site admins; null: the default; a field left out keeps its value)",
          params: OrgSlugParams,
          body: PipelineLimitsBody,
          response: { 200: PipelineLimits, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        const { org_slug: slug } = request.params;
        const body = request.body;
        if (body.build_timeout_seconds !== undefined) await organizations.setBuildTimeout(slug, body.build_timeout_seconds);
        if (body.disk_quota_mb !== undefined) await organizations.setDiskQuota(slug, body.disk_quota_mb);
        if (body.outbound !== undefined) await organizations.setSandboxOutbound(slug, body.outbound);
        return view(slug);
      },
    );
  };
}
