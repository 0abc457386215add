import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';
import { Member } from '../../modules/organizations/index.js';

/** A member as the workspace's detail shows it: Ancla's clients read `email` as a string, so a hidden one is `""`. */
export const WorkspaceMember = Type.Object(
  {
    user_id: Id,
    username: Type.String(),
    email: Type.String({ description: 'shown to organization admins and to the member themself, else ""' }),
    admin: Type.Boolean(),
  },
  { $id: 'WorkspaceMember' },
);

/** A workspace is an organization seen by its slug (docs/api-decisions.md). */
export const Workspace = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    member_count: Type.Integer(),
    project_count: Type.Integer(),
    service_count: Type.Integer({ description: 'applications in all its projects' }),
    members: Type.Optional(Type.Array(WorkspaceMember, { description: 'one workspace (GET, PATCH, POST): its members' })),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'Workspace' },
);

export const CreateWorkspaceBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
    personal: Type.Optional(Type.Boolean({ description: "sent by Ancla's CLI; Slipway has no personal workspaces, so it is ignored" })),
  },
  { additionalProperties: false },
);

export const UpdateWorkspaceBody = Type.Object({ name: Name }, { additionalProperties: false });

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
    workspace_slug: Type.String({ description: "workspace slug (Ancla's name of `workspace`)" }),
    workspace_name: Type.String(),
    team: Type.Union([Type.String({ description: 'team slug' }), Type.Null()]),
    services: Type.Array(Type.String(), { description: 'slugs of its applications' }),
    environments: Type.Array(Type.String(), { description: 'slugs of its environments' }),
    service_count: Type.Integer({ description: 'its applications' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'WorkspaceProject' },
);

export const CreateWorkspaceProjectBody = Type.Object({ name: Name, slug: Type.Optional(Slug) }, { additionalProperties: false });

export const UpdateWorkspaceProjectBody = Type.Object(
  {
    name: Type.Optional(Name),
    team: Type.Optional(Type.Union([Slug, Type.Null()], { description: 'team slug, or null for none' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WorkspaceMemberParams = Type.Object({ workspace: Slug, user_id: Type.String({ format: 'uuid' }) });
export { WorkspaceParams, WorkspaceProjectParams } from '../../platform/http/schemas.js';
