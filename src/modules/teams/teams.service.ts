import { v7 as uuidv7 } from 'uuid';
import { conflict, forbidden, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { slugFor } from '../../platform/slug.js';
import { membersAsSeenBy, OrganizationAccess, OrganizationScope } from '../organizations/index.js';
import { UsersService } from '../users/index.js';
import { TeamsRepository } from './teams.repository.js';

type TeamRow = Awaited<ReturnType<TeamsRepository['list']>>[number];

const toTeam = (t: TeamRow) => ({
  id: t.id,
  name: t.name,
  slug: t.slug,
  members: t.members,
  projects: t.projects,
  created: iso(t.created_at),
});

/**
 * Teams group members of a workspace and own projects. Every member reads teams and
 * their configuration; creating teams and changing who is in them is for workspace
 * admins, like the workspace's own membership.
 */
export class TeamsService {
  private readonly teams: TeamsRepository;
  private readonly users: UsersService;
  private readonly access: OrganizationAccess;
  readonly scope: OrganizationScope;

  constructor(teams: TeamsRepository, users: UsersService, scope: OrganizationScope, access: OrganizationAccess) {
    this.teams = teams;
    this.users = users;
    this.access = access;
    this.scope = scope;
  }

  async list(userId: string, orgSlug: string) {
    const { organization, admin } = await this.scope.organization(userId, orgSlug);
    return (await this.teams.list(organization.id))
      .map(toTeam)
      .map((t) => ({ ...t, members: membersAsSeenBy(t.members, { userId, admin }) }));
  }

  async get(userId: string, orgSlug: string, teamSlug: string) {
    const { organization, team, admin } = await this.scope.team(userId, orgSlug, teamSlug);
    const described = await this.describe(organization.id, team.id);
    return { ...described, members: membersAsSeenBy(described.members, { userId, admin }) };
  }

  private async describe(organizationId: string, teamId: string) {
    const [row] = await this.teams.list(organizationId, teamId);
    if (!row) throw notFound('Team');
    return toTeam(row);
  }

  /** A user named by username or email who is a member of the organization. */
  private async organizationMember(organizationId: string, username: string, field: string) {
    const user = await this.users.findByUsernameOrEmail(username);
    if (!user) throw notFound(`User '${username}'`);
    if (!(await this.access.isMember(user.id, organizationId))) throw invalid(field, `${user.username} is not a member of this workspace`);
    return user;
  }

  async create(userId: string, orgSlug: string, input: { name: string; slug?: string; members?: string[] }) {
    const { organization } = await this.scope.organization(userId, orgSlug);
    await this.scope.requireAdmin(userId, organization.id);
    const slug = slugFor(input.name, input.slug);
    const memberIds: string[] = [];
    for (const name of input.members ?? []) memberIds.push((await this.organizationMember(organization.id, name, 'members')).id);
    const id = uuidv7();
    try {
      await this.teams.insert({ id, organization_id: organization.id, name: input.name, slug }, [...new Set(memberIds)]);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A team with slug '${slug}' already exists in ${organization.slug}`);
      throw err;
    }
    return this.describe(organization.id, id);
  }

  /**
   * A team's configuration is changed by its own members and by the workspace's admins;
   * other members of the workspace may read it (it is inherited by the team's projects)
   * but not change it.
   */
  async requireConfigWriter(userId: string, orgSlug: string, teamSlug: string) {
    const { admin, team } = await this.scope.team(userId, orgSlug, teamSlug);
    if (admin || (await this.teams.isMember(team.id, userId))) return;
    throw forbidden(`Only members of team '${team.slug}' and workspace admins change its configuration`);
  }

  async addMember(userId: string, orgSlug: string, teamSlug: string, input: { username: string }) {
    const { organization, team } = await this.scope.team(userId, orgSlug, teamSlug);
    await this.scope.requireAdmin(userId, organization.id);
    const user = await this.organizationMember(organization.id, input.username, 'username');
    if (!(await this.teams.addMember(team, user.id))) throw conflict(`${user.username} is already in team ${team.slug}`);
    return this.describe(organization.id, team.id);
  }

  async removeMember(userId: string, orgSlug: string, teamSlug: string, memberId: string) {
    const { organization, team } = await this.scope.team(userId, orgSlug, teamSlug);
    await this.scope.requireAdmin(userId, organization.id);
    if (!(await this.teams.removeMember(team.id, memberId))) throw notFound('Team member');
    return { ok: true };
  }

  async delete(userId: string, orgSlug: string, teamSlug: string) {
    const { organization, team } = await this.scope.team(userId, orgSlug, teamSlug);
    await this.scope.requireAdmin(userId, organization.id);
    await this.teams.delete(team.id);
    return { ok: true };
  }
}
