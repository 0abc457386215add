import { Type, type Static } from 'typebox';
import { Id, MAX_PAGE, NullableTimestamp, Timestamp } from '../../platform/http/schemas.js';

/** The most applications one answer holds: the home page of a large installation asks for pages. */
export const OVERVIEW_MAX_APPLICATIONS = 200;
/** The most applications one page holds, as every paginated list of the API (`per_page` at most 100). */
export const OVERVIEW_MAX_PER_PAGE = 100;

/**
 * Without `page` or `per_page`, the first 200 applications as before (what the organization pages' pickers read);
 * with either, one page, and a `Link: <…>; rel="next"` when more follow (issue 35: as `GET /v1/projects` pages).
 */
export const OverviewQuery = Type.Object(
  {
    organization: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'only this organization (a slug)' })),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE })),
    per_page: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: OVERVIEW_MAX_PER_PAGE,
        description: `asks for pages (default ${OVERVIEW_MAX_PER_PAGE} when only \`page\` is given)`,
      }),
    ),
  },
  { additionalProperties: false },
);

const LastDeployment = Type.Object({
  id: Id,
  release_version: Type.Integer(),
  status: Type.Union([
    Type.Literal('queued'),
    Type.Literal('deploying'),
    Type.Literal('complete'),
    Type.Literal('error'),
    Type.Literal('rolled_back'),
  ]),
  is_rollback: Type.Boolean(),
  created: Timestamp,
  finished: NullableTimestamp,
  started_by: Type.Union([Type.String(), Type.Null()], {
    description: 'who asked for it (their username); null when no person did: a push, a promotion by the chain, a guard, cron',
  }),
});

export const OverviewApplication = Type.Object({
  id: Id,
  name: Type.String(),
  slug: Type.String(),
  organization_slug: Type.String(),
  project_slug: Type.String(),
  state: Type.Union([Type.Literal('failing'), Type.Literal('deploying'), Type.Literal('healthy'), Type.Literal('idle')], {
    description: '`failing`: see `problems`; `deploying`: production has a deployment under way; `idle`: nothing serves production',
  }),
  problems: Type.Array(Type.String(), { description: 'what is failing in production, in words (empty unless `failing`)' }),
  serving_release_version: Type.Union([Type.Integer(), Type.Null()], { description: "production's last completed release" }),
  instances: Type.Object({
    total: Type.Integer(),
    healthy: Type.Integer({ description: 'healthy or running' }),
    crashed: Type.Integer(),
  }),
  last_deployment: Type.Union([LastDeployment, Type.Null()], { description: "production's newest deployment" }),
  traffic: Type.Object(
    {
      bucket_seconds: Type.Integer(),
      requests: Type.Array(Type.Integer()),
      errors: Type.Array(Type.Integer(), { description: '5xx answers' }),
    },
    { description: "production's requests at the edge over the last hour, oldest bucket first (a sparkline's points)" },
  ),
});

export const Overview = Type.Object(
  {
    applications: Type.Array(OverviewApplication, {
      description:
        'failing first, then deploying, healthy, idle; by organization, project and application within each (a page is chosen by organization, project and application slug first, then ordered so)',
    }),
    truncated: Type.Boolean({ description: 'more applications follow this answer (ask for the next page, or per organization)' }),
  },
  { $id: 'Overview' },
);

export type OverviewApplicationView = Static<typeof OverviewApplication>;
