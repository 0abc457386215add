import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';

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
