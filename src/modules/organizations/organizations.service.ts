import { v7 as uuidv7 } from 'uuid';
import { conflict, forbidden, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { slugFor } from '../../platform/slug.js';
import { atLeast, type Role } from '../../platform/access/roles.js';
import { UsersService } from '../users/index.js';
import { OrganizationAccess } from './access.js';
import { OrganizationsRepository } from './organizations.repository.js';

/**
 * Members' e-mail addresses are for the organization's admins (who add members by
 * username or e-mail) and for each member themself; other members see usernames only.
 */
export function membersAsSeenBy<M extends { user_id: string; email?: string }>(
  members: M[],
  viewer: { userId: string; admin: boolean },
): M[] {
  if (viewer.admin) return members;
  return members.map((m) => (m.user_id === viewer.userId ? m : (({ email: _email, ...rest }) => rest as M)(m)));
}

/**
 * The rule for changing a membership (`next` null: removing it), checked under the membership
 * lock with the caller's role re-read there, so a caller demoted by a concurrent request no
 * longer acts with their old role. Admins manage members below owner; only owners make,
 * change or remove an owner; nobody grants more than their own role; a member may always leave;
 * the last owner stays.
 */
function checkMembershipChange(
  members: Array<{ user_id: string; role: Role }>,
  callerId: string,
  target: { user_id: string; role: Role },
  next: Role | null,
) {
  const caller = members.find((m) => m.user_id === callerId)?.role;
  const leaving = next === null && target.user_id === callerId;
  if (!leaving) {
    if (!caller || !atLeast(caller, 'admin')) throw forbidden('Only organization admins and owners can change members');
    if ((target.role === 'owner' || next === 'owner') && caller !== 'owner')
      throw forbidden('Only an owner of the organization can make, change or remove an owner');
    if (next && !atLeast(caller, next)) throw forbidden(`Your role is ${caller}: you cannot grant ${next}`);
  }
  if (target.role === 'owner' && next !== 'owner' && members.filter((m) => m.role === 'owner').length <= 1)
    throw conflict(`The last owner of an organization cannot be ${next === null ? 'removed' : 'demoted'}: make another member owner first`);
}

export class OrganizationsService {
  private readonly orgs: OrganizationsRepository;
  private readonly users: UsersService;
  private readonly access: OrganizationAccess;

  constructor(
    orgs: OrganizationsRepository,
    users: UsersService,
    access: OrganizationAccess,
    private readonly limits: { orgsPerUserMax: number } = { orgsPerUserMax: Number.MAX_SAFE_INTEGER },
  ) {
    this.orgs = orgs;
    this.users = users;
    this.access = access;
  }

  /** The caller's organizations, by name, with their counts (`/organizations` shows all but the applications'). */
  async list(userId: string) {
    const rows = await this.orgs.listForUser(userId);
    return rows.map((o) => ({
      id: o.id,
      name: o.name,
      slug: o.slug,
      member_count: Number(o.member_count ?? 0),
      project_count: Number(o.project_count ?? 0),
      application_count: Number(o.application_count ?? 0),
      created: iso(o.created_at),
      updated: iso(o.updated_at),
    }));
  }

  /** The organization by slug, once the caller is known to be a member (else 404/403). */
  async resolve(userId: string, slug: string) {
    const org = await this.orgs.findBySlug(slug);
    if (!org) throw notFound('Organization');
    const membership = await this.access.requireMember(userId, org.id);
    return { org, membership };
  }

  async detail(userId: string, slug: string) {
    const { org, membership } = await this.resolve(userId, slug);
    const detail = await this.describe(org.id);
    return { ...detail, members: membersAsSeenBy(detail.members, { userId, admin: membership.admin }) };
  }

  async describe(organizationId: string) {
    const org = await this.orgs.findById(organizationId);
    if (!org) throw notFound('Organization');
    const [members, counts] = await Promise.all([this.orgs.members(org.id), this.orgs.counts(org.id)]);
    return {
      id: org.id,
      name: org.name,
      slug: org.slug,
      members,
      member_count: members.length,
      ...counts,
      created: iso(org.created_at),
      updated: iso(org.updated_at),
    };
  }

  /**
   * A new organization with the caller as its admin and creator. A user who is not a site
   * administrator creates at most ORGS_PER_USER_MAX (the pipeline's per-user budget is shared
   * by them all, see docs/api-decisions.md).
   */
  async create(user: { id: string; is_admin: boolean }, input: { name: string; slug?: string }) {
    const slug = slugFor(input.name, input.slug);
    const max = user.is_admin ? undefined : this.limits.orgsPerUserMax;
    try {
      const org = await this.orgs.createWithAdmin({ id: uuidv7(), name: input.name, slug }, user.id, max);
      if (!org)
        throw conflict(`You have already created ${max} organizations, the most a user may create; delete one or ask a site administrator`);
      return this.describe(org.id);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`An organization with slug '${slug}' already exists`);
      throw err;
    }
  }

  /** A new name for the organization (admins); its slug stays, so no path changes. */
  async rename(userId: string, slug: string, name: string) {
    const { org, membership } = await this.resolve(userId, slug);
    if (!membership.admin) throw forbidden('Only organization admins can do this');
    await this.orgs.rename(org.id, name);
    return this.detail(userId, slug);
  }

  /** Deletes an organization without projects (admins); 409 while it has one. */
  async deleteEmpty(userId: string, slug: string) {
    const { org, membership } = await this.resolve(userId, slug);
    if (membership.role !== 'owner') throw forbidden('Only an owner of the organization can delete it');
    if (!(await this.orgs.deleteIfEmpty(org.id)))
      throw conflict(`${org.slug} still has projects: delete them first (a project's services, instances and records stay otherwise)`);
  }

  async addMember(userId: string, slug: string, input: { username: string; admin?: boolean; role?: Role }) {
    const { org, membership } = await this.resolve(userId, slug);
    const role: Role = input.role ?? (input.admin ? 'admin' : 'developer');
    if (!atLeast(membership.role, 'admin')) throw forbidden('Only organization admins and owners can add members');
    if (!atLeast(membership.role, role)) throw forbidden(`Your role is ${membership.role}: you cannot grant ${role}`);
    const user = await this.users.findByUsernameOrEmail(input.username);
    if (!user) throw notFound(`User '${input.username}'`);
    try {
      await this.orgs.addMember(org.id, user.id, role);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`${user.username} is already a member`);
      throw err;
    }
    return this.describe(org.id);
  }

  /** Adds a user with a role without checking a caller (an accepted invitation: its inviter was checked when inviting). */
  async admit(organizationId: string, userId: string, role: Role) {
    try {
      await this.orgs.addMember(organizationId, userId, role);
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** Sets a member's role, by the rule of checkMembershipChange. */
  async setRole(userId: string, slug: string, memberId: string, role: Role) {
    const { org } = await this.resolve(userId, slug);
    const result = await this.orgs.changeMembership(org.id, memberId, (current, members) => {
      checkMembershipChange(members, userId, { user_id: memberId, role: current.role }, role);
      return role;
    });
    if (!result) throw notFound('Member');
    return this.describe(org.id);
  }

  /** admin <-> developer (the flag of before roles); an owner is demoted to developer, by an owner. */
  async toggleAdmin(userId: string, slug: string, memberId: string) {
    const { org } = await this.resolve(userId, slug);
    const result = await this.orgs.changeMembership(org.id, memberId, (current, members) => {
      const next: Role = atLeast(current.role, 'admin') ? 'developer' : 'admin';
      checkMembershipChange(members, userId, { user_id: memberId, role: current.role }, next);
      return next;
    });
    if (!result) throw notFound('Member');
    return { ok: true, admin: atLeast(result.role!, 'admin') };
  }

  /** Whether viewers read the logs of protected environments (owners; the route table checks the role). */
  async setAccessSettings(userId: string, slug: string, input: { viewers_see_protected_logs: boolean }) {
    const { org, membership } = await this.resolve(userId, slug);
    if (membership.role !== 'owner') throw forbidden("Only an owner sets the organization's access settings");
    await this.orgs.setViewersSeeProtectedLogs(org.id, input.viewers_see_protected_logs);
    return { viewers_see_protected_logs: input.viewers_see_protected_logs };
  }

  /** An organization's own build timeout, or null for the default (site administrators only: checked by the route). */
  async buildTimeout(slug: string): Promise<number | null> {
    const org = await this.orgs.findBySlug(slug);
    if (!org) throw notFound('Organization');
    return org.build_timeout_seconds;
  }

  /** An organization's own disk quota in MiB, or null for the default (site administrators only: checked by the route). */
  async diskQuota(slug: string): Promise<number | null> {
    const org = await this.orgs.findBySlug(slug);
    if (!org) throw notFound('Organization');
    return org.disk_quota_mb;
  }

  async setDiskQuota(slug: string, megabytes: number | null): Promise<number | null> {
    const org = await this.orgs.setDiskQuota(slug, megabytes);
    if (!org) throw notFound('Organization');
    return org.disk_quota_mb;
  }

  async setBuildTimeout(slug: string, seconds: number | null): Promise<number | null> {
    const org = await this.orgs.setBuildTimeout(slug, seconds);
    if (!org) throw notFound('Organization');
    return org.build_timeout_seconds;
  }

  /** Whether the organization's sandboxes may connect out, or null for the site's setting (site administrators only). */
  async sandboxOutbound(slug: string): Promise<boolean | null> {
    const org = await this.orgs.findBySlug(slug);
    if (!org) throw notFound('Organization');
    return org.sandbox_outbound;
  }

  async setSandboxOutbound(slug: string, outbound: boolean | null): Promise<boolean | null> {
    const org = await this.orgs.setSandboxOutbound(slug, outbound);
    if (!org) throw notFound('Organization');
    return org.sandbox_outbound;
  }

  /** Admins remove anyone below owner, owners anyone; a member may remove only themselves (leave). */
  async removeMember(userId: string, slug: string, memberId: string) {
    const { org } = await this.resolve(userId, slug);
    const result = await this.orgs.changeMembership(org.id, memberId, (current, members) => {
      checkMembershipChange(members, userId, { user_id: memberId, role: current.role }, null);
      return null;
    });
    if (!result) throw notFound('Member');
    return { ok: true };
  }
}
