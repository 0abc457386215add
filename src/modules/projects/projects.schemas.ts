import { Type } from 'typebox';
import { Id, MAX_PAGE, Name, Slug, Timestamp } from '../../platform/http/schemas.js';

export const ProjectSummary = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    organization_id: Id,
    organization_slug: Type.String(),
    application_count: Type.Integer(),
    created: Timestamp,
  },
  { $id: 'ProjectSummary' },
);

export const ProjectDetail = Type.Object(
  { ...ProjectSummary.properties, organization_name: Type.String(), updated: Timestamp },
  { $id: 'ProjectDetail' },
);

export const CreateProjectBody = Type.Object(
  { name: Name, slug: Type.Optional(Slug), organization_id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);

export const ProjectParams = Type.Object({ org_slug: Slug, project_slug: Slug });

/**
 * The project list is an array (the API's contract): the whole list when no page is asked for (the
 * spec's answer), else one page, with `Link: <…>; rel="next"` when more follow (issue 35: a page of an
 * installation with thousands of projects costs what the page costs).
 */
export const ProjectListQuery = Type.Object(
  {
    organization: Type.Optional(Type.String({ ...Slug, description: "only this organization's projects (a slug)" })),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE })),
    per_page: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'asks for pages (default 100 when only `page` is given)' }),
    ),
  },
  { additionalProperties: false },
);
