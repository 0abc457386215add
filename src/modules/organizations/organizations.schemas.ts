import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';

export const OrganizationSummary = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    member_count: Type.Integer(),
    project_count: Type.Integer(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'OrganizationSummary' },
);

export const Member = Type.Object(
  {
    user_id: Id,
    username: Type.String(),
    email: Type.Optional(Type.String({ description: 'shown to organization admins, and to the member themself' })),
    admin: Type.Boolean(),
  },
  { $id: 'Member' },
);

export const OrganizationDetail = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    members: Type.Array(Member),
    member_count: Type.Integer(),
    project_count: Type.Integer(),
    application_count: Type.Integer(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'OrganizationDetail' },
);

export const CreateOrganizationBody = Type.Object({ name: Name, slug: Type.Optional(Slug) }, { additionalProperties: false });

export const AddMemberBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 254, description: 'Username or email' }),
    admin: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);

export const OrgSlugParams = Type.Object({ org_slug: Slug });
export const MemberParams = Type.Object({ org_slug: Slug, user_id: Type.String({ format: 'uuid' }) });
