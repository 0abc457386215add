import type { Db } from '../../platform/db/database.js';
import { forbidden, notFound } from '../../platform/errors.js';
import { linkInstallation, organizationInstallations, unlinkInstallation } from '../../platform/github/installation-links.js';
import type { GitHubSetupFlow } from '../../platform/github/setup-flow.js';

/** What the installation routes need of organizations (a port: `organizations` sits above this module). */
export interface InstallationOrganizations {
  /** The organization of a slug and whether the user is its admin (404 unknown, 403 not a member). */
  resolve(userId: string, slug: string): Promise<{ id: string; slug: string; admin: boolean }>;
  /** The organization of a slug, for a site administrator (no membership needed). */
  findBySlug(slug: string): Promise<{ id: string; slug: string } | undefined>;
  isAdmin(userId: string, organizationId: string): Promise<boolean>;
  slugOf(organizationId: string): Promise<string | undefined>;
}

const view = (row: Awaited<ReturnType<typeof organizationInstallations>>[number]) => ({
  installation_id: Number(row.installation_id),
  linked_via: row.linked_via,
  linked_at: row.linked_at.toISOString(),
  account: row.account,
  repository_selection: row.repository_selection,
});

/**
 * Links of GitHub App installations to organizations: the App's setup flow for an
 * organization's admins, a direct link for site administrators, the list for members.
 */
export class GitHubInstallationsService {
  constructor(
    private readonly db: Db,
    private readonly flow: GitHubSetupFlow,
    private readonly organizations: InstallationOrganizations,
  ) {}

  private async requireAdmin(userId: string, slug: string) {
    const org = await this.organizations.resolve(userId, slug);
    if (!org.admin) throw forbidden('Only organization admins link GitHub App installations');
    return org;
  }

  async list(userId: string, slug: string) {
    const org = await this.organizations.resolve(userId, slug);
    return (await organizationInstallations(this.db, org.id)).map(view);
  }

  /** Starts the App's installation for the organization: where to send the admin. */
  async startSetup(userId: string, slug: string) {
    const org = await this.requireAdmin(userId, slug);
    return this.flow.start(org.id, userId);
  }

  /**
   * GitHub's redirect after the installation: the state must be one this platform sealed for
   * the calling user, who must still be an admin of its organization, and GitHub must confirm
   * (through `code`) that this GitHub user reaches the installation.
   */
  async completeSetup(userId: string, input: { installation_id: number; state: string; code?: string }) {
    const claims = this.flow.readState(input.state);
    if (claims.userId !== userId) throw forbidden('This setup was started by another user: start it again while signed in as yourself');
    if (!(await this.organizations.isAdmin(userId, claims.organizationId)))
      throw forbidden('Only organization admins link GitHub App installations');
    if (!input.code)
      throw forbidden(
        'GitHub sent no authorization code: turn on "Request user authorization (OAuth) during installation" in the App\'s settings, ' +
          'so GitHub can confirm who installed it',
      );
    if (!(await this.flow.userReaches(input.code, input.installation_id)))
      throw forbidden(
        `GitHub does not list installation ${input.installation_id} among those the authorizing GitHub user administers (as an admin of its GitHub organization, or as its user account)`,
      );
    await linkInstallation(this.db, {
      installationId: input.installation_id,
      organizationId: claims.organizationId,
      userId,
      via: 'setup',
    });
    return this.linked(claims.organizationId, input.installation_id);
  }

  /** A site administrator links an installation to an organization (moving it from another one). */
  async adminLink(userId: string, installationId: number, organizationSlug: string) {
    const org = await this.organizations.findBySlug(organizationSlug);
    if (!org) throw notFound(`Organization '${organizationSlug}'`);
    await linkInstallation(this.db, { installationId, organizationId: org.id, userId, via: 'admin', move: true });
    return this.linked(org.id, installationId);
  }

  async unlink(userId: string, slug: string, installationId: number) {
    const org = await this.requireAdmin(userId, slug);
    if (!(await unlinkInstallation(this.db, installationId, org.id)))
      throw notFound(`GitHub App installation ${installationId} of ${org.slug}`);
  }

  private async linked(organizationId: string, installationId: number) {
    const row = (await organizationInstallations(this.db, organizationId)).find((r) => Number(r.installation_id) === installationId)!;
    return { organization: (await this.organizations.slugOf(organizationId)) ?? organizationId, ...view(row) };
  }
}
