import type { Role } from '../../platform/access/roles.js';
import { forbidden } from '../../platform/errors.js';
import type { OrganizationsRepository } from './organizations.repository.js';

/**
 * Membership, which every module asks here. What a member's role may do is decided before the
 * handler runs, by the route table (platform/access/route-access.ts); admins' own checks stay here.
 */
export class OrganizationAccess {
  constructor(private readonly orgs: OrganizationsRepository) {}

  /** Whether the user is a member (for checks that answer something other than 403). */
  async isMember(userId: string, organizationId: string): Promise<boolean> {
    return (await this.orgs.membership(organizationId, userId)) !== undefined;
  }

  /** The organization of a slug or id (null when none), for modules that hold only a reference. */
  findBySlug(slug: string) {
    return this.orgs.findBySlug(slug);
  }

  findById(id: string) {
    return this.orgs.findById(id);
  }

  async requireMember(userId: string, organizationId: string): Promise<{ admin: boolean; role: Role }> {
    const membership = await this.orgs.membership(organizationId, userId);
    if (!membership) throw forbidden();
    return membership;
  }

  async requireAdmin(userId: string, organizationId: string): Promise<void> {
    const membership = await this.requireMember(userId, organizationId);
    if (!membership.admin) throw forbidden('Only organization admins can do this');
  }
}
