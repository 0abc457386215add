import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import type { OrganizationAccess } from './access.js';
import type { OrganizationsService } from './organizations.service.js';

/**
 * Resolves the slugs of a path inside an organization (the API's `/workspaces/{workspace}/...`),
 * checking access once at the organization (404 when it does not exist, 403 when the caller is
 * not a member) and then finding each nested resource inside it (404 when absent there).
 * Its lookups are read-only: the tables stay their own modules' to write.
 */
export class OrganizationScope {
  private readonly orgs: OrganizationsService;
  private readonly access: OrganizationAccess;

  constructor(
    private readonly db: Db,
    orgs: OrganizationsService,
    access: OrganizationAccess,
  ) {
    this.orgs = orgs;
    this.access = access;
  }

  /** The organization and whether the caller is one of its admins. */
  async organization(userId: string, organizationSlug: string) {
    const { org, membership } = await this.orgs.resolve(userId, organizationSlug);
    return { organization: org, admin: membership.admin };
  }

  async requireAdmin(userId: string, organizationId: string) {
    await this.access.requireAdmin(userId, organizationId);
  }

  async project(userId: string, organizationSlug: string, projectSlug: string) {
    const scope = await this.organization(userId, organizationSlug);
    const project = await this.db
      .selectFrom('projects')
      .selectAll()
      .where('organization_id', '=', scope.organization.id)
      .where('slug', '=', projectSlug)
      .executeTakeFirst();
    if (!project) throw notFound('Project');
    return { ...scope, project };
  }

  async environment(userId: string, organizationSlug: string, projectSlug: string, envSlug: string) {
    const scope = await this.project(userId, organizationSlug, projectSlug);
    const environment = await this.db
      .selectFrom('environments')
      .selectAll()
      .where('project_id', '=', scope.project.id)
      .where('slug', '=', envSlug)
      // A deleted environment is gone from the API (its records stay readable until swept).
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!environment) throw notFound('Environment');
    return { ...scope, environment };
  }

  /** An application of the project, by slug (the API calls it a service, and so does its 404). */
  async application(projectId: string, applicationSlug: string) {
    const app = await this.db
      .selectFrom('applications')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('slug', '=', applicationSlug)
      .executeTakeFirst();
    if (!app) throw notFound(`Service '${applicationSlug}'`);
    return app;
  }

  /**
   * The slug of the application of that id in the project of those slugs, or null. No access is
   * checked: only for reading a path's id as its slug before the route checks access by slug.
   */
  async applicationSlugById(organizationSlug: string, projectSlug: string, applicationId: string): Promise<string | null> {
    const row = await this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
      .select('applications.slug')
      .where('applications.id', '=', applicationId)
      .where('projects.slug', '=', projectSlug)
      .where('organizations.slug', '=', organizationSlug)
      .executeTakeFirst();
    return row?.slug ?? null;
  }

  async team(userId: string, organizationSlug: string, teamSlug: string) {
    const scope = await this.organization(userId, organizationSlug);
    const team = await this.db
      .selectFrom('teams')
      .selectAll()
      .where('organization_id', '=', scope.organization.id)
      .where('slug', '=', teamSlug)
      .executeTakeFirst();
    if (!team) throw notFound('Team');
    return { ...scope, team };
  }
}
