import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import { OrganizationAccess } from '../organizations/index.js';
import { OrganizationsService } from '../organizations/index.js';

/**
 * Resolves the slugs of a `/workspaces/{workspace}/...` path, checking access once at the
 * workspace (404 when it does not exist, 403 when the caller is not a member) and then
 * finding each nested resource inside it (404 when absent there).
 */
export class WorkspaceScope {
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

  /** The workspace (organization) and the caller's membership in it. */
  async workspace(userId: string, workspaceSlug: string) {
    const { org, membership } = await this.orgs.resolve(userId, workspaceSlug);
    return { workspace: org, admin: membership.admin };
  }

  async requireAdmin(userId: string, organizationId: string) {
    await this.access.requireAdmin(userId, organizationId);
  }

  async project(userId: string, workspaceSlug: string, projectSlug: string) {
    const ws = await this.workspace(userId, workspaceSlug);
    const project = await this.db
      .selectFrom('projects')
      .selectAll()
      .where('organization_id', '=', ws.workspace.id)
      .where('slug', '=', projectSlug)
      .executeTakeFirst();
    if (!project) throw notFound('Project');
    return { ...ws, project };
  }

  async environment(userId: string, workspaceSlug: string, projectSlug: string, envSlug: string) {
    const scope = await this.project(userId, workspaceSlug, projectSlug);
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

  /** A service of an environment is an application of its project, by slug. */
  async service(projectId: string, serviceSlug: string) {
    const app = await this.db
      .selectFrom('applications')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('slug', '=', serviceSlug)
      .executeTakeFirst();
    if (!app) throw notFound(`Service '${serviceSlug}'`);
    return app;
  }

  async team(userId: string, workspaceSlug: string, teamSlug: string) {
    const ws = await this.workspace(userId, workspaceSlug);
    const team = await this.db
      .selectFrom('teams')
      .selectAll()
      .where('organization_id', '=', ws.workspace.id)
      .where('slug', '=', teamSlug)
      .executeTakeFirst();
    if (!team) throw notFound('Team');
    return { ...ws, team };
  }
}
