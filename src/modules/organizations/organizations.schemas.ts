import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';

export const RoleName = Type.Union(
  [Type.Literal('owner'), Type.Literal('admin'), Type.Literal('deployer'), Type.Literal('developer'), Type.Literal('viewer')],
  { description: 'owner, admin, deployer, developer or viewer (docs/roles.md)' },
);

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
    /** Owner or admin (the flag of before roles, kept for clients that read it). */
    admin: Type.Boolean(),
    role: RoleName,
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
    admin: Type.Optional(Type.Boolean({ default: false, description: 'role admin (when no role is given)' })),
    role: Type.Optional(RoleName),
  },
  { additionalProperties: false },
);

export const SetRoleBody = Type.Object({ role: RoleName }, { additionalProperties: false });

export const AccessSettings = Type.Object(
  { viewers_see_protected_logs: Type.Boolean({ description: 'whether viewers read the logs of protected environments' }) },
  { additionalProperties: false, $id: 'AccessSettings' },
);

export const OrgSlugParams = Type.Object({ org_slug: Slug });
export const MemberParams = Type.Object({ org_slug: Slug, user_id: Type.String({ format: 'uuid' }) });
