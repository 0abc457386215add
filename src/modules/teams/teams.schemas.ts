import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';

export const TeamMember = Type.Object(
  {
    user_id: Id,
    username: Type.String(),
    email: Type.Optional(Type.String({ description: 'shown to workspace admins and the member themself' })),
  },
  { $id: 'TeamMember' },
);

export const Team = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    members: Type.Array(TeamMember),
    projects: Type.Array(Type.String(), { description: 'slugs of the projects the team owns' }),
    created: Timestamp,
  },
  { $id: 'Team' },
);

export const CreateTeamBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
    members: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 254 }), { maxItems: 500, description: 'usernames or emails of workspace members' }),
    ),
  },
  { additionalProperties: false },
);

export const AddTeamMemberBody = Type.Object(
  { username: Type.String({ minLength: 1, maxLength: 254, description: 'Username or email of a workspace member' }) },
  { additionalProperties: false },
);

export const TeamParams = Type.Object({ workspace: Slug, team: Slug });
export const TeamMemberParams = Type.Object({ workspace: Slug, team: Slug, user_id: Type.String({ format: 'uuid' }) });
