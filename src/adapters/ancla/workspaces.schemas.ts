import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';
import { Member } from '../../modules/organizations/index.js';

/** A workspace is an organization seen by its slug (docs/api-decisions.md). */
export const Workspace = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    member_count: Type.Integer(),
    project_count: Type.Integer(),
    service_count: Type.Integer({ description: 'applications in all its projects' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'Workspace' },
);

export const CreateWorkspaceBody = Type.Object({ name: Name, slug: Type.Optional(Slug) }, { additionalProperties: false });

export const AddWorkspaceMemberBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 254, description: 'Username or email' }),
    admin: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);

export { Member };

/** A project seen from its workspace, with the team it belongs to. */
export const WorkspaceProject = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    workspace: Type.String({ description: 'workspace slug' }),
    team: Type.Union([Type.String({ description: 'team slug' }), Type.Null()]),
    services: Type.Array(Type.String(), { description: 'slugs of its applications' }),
    environments: Type.Array(Type.String(), { description: 'slugs of its environments' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'WorkspaceProject' },
);

export const UpdateWorkspaceProjectBody = Type.Object(
  {
    name: Type.Optional(Name),
    team: Type.Optional(Type.Union([Slug, Type.Null()], { description: 'team slug, or null for none' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WorkspaceMemberParams = Type.Object({ workspace: Slug, user_id: Type.String({ format: 'uuid' }) });
export { WorkspaceParams, WorkspaceProjectParams } from '../../platform/http/schemas.js';
