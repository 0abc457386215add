import { updateProjectRecord } from '../projects/index.js';
import type { Db } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { membersAsSeenBy, OrganizationsService } from '../organizations/index.js';
import { WorkspaceScope } from './workspace-scope.js';
import { WorkspacesRepository } from './workspaces.repository.js';

type WorkspaceRow = NonNullable<Awaited<ReturnType<WorkspacesRepository['findById']>>>;
type ProjectRow = Awaited<ReturnType<WorkspacesRepository['projects']>>[number];

const toWorkspace = (o: WorkspaceRow) => ({
  id: o.id,
  name: o.name,
  slug: o.slug,
  member_count: Number(o.member_count ?? 0),
  project_count: Number(o.project_count ?? 0),
  service_count: Number(o.service_count ?? 0),
  created: iso(o.created_at),
  updated: iso(o.updated_at),
});

/**
 * Workspaces are organizations addressed by slug: creation and membership go through
 * OrganizationsService so both views always show the same members and rules.
 */
export class WorkspacesService {
  private readonly repo: WorkspacesRepository;
  private readonly orgs: OrganizationsService;
  readonly scope: WorkspaceScope;

  constructor(
    private readonly db: Db,
    repo: WorkspacesRepository,
    orgs: OrganizationsService,
    scope: WorkspaceScope,
  ) {
    this.repo = repo;
    this.orgs = orgs;
    this.scope = scope;
  }

  async list(userId: string) {
    return (await this.repo.listForUser(userId)).map(toWorkspace);
  }

  async describe(organizationId: string) {
    const row = await this.repo.findById(organizationId);
    if (!row) throw notFound('Workspace');
    return toWorkspace(row);
  }

  async get(userId: string, slug: string) {
    const { workspace } = await this.scope.workspace(userId, slug);
    return this.describe(workspace.id);
  }

  async create(user: { id: string; is_admin: boolean }, input: { name: string; slug?: string }) {
    const org = await this.orgs.create(user, input);
    return this.describe(org.id);
  }

  async members(userId: string, slug: string) {
    const { workspace, admin } = await this.scope.workspace(userId, slug);
    return membersAsSeenBy((await this.orgs.describe(workspace.id)).members, { userId, admin });
  }

  /** Admins add members; answers the new member. */
  async addMember(userId: string, slug: string, input: { username: string; admin?: boolean }) {
    const detail = await this.orgs.addMember(userId, slug, input);
    const wanted = input.username.toLowerCase();
    const member = detail.members.find((m) => m.username.toLowerCase() === wanted || m.email.toLowerCase() === wanted);
    return member!;
  }

  removeMember(userId: string, slug: string, memberId: string) {
    return this.orgs.removeMember(userId, slug, memberId);
  }

  private toProject(workspaceSlug: string, p: ProjectRow) {
    return {
      id: p.id,
      name: p.name,
      slug: p.slug,
      workspace: workspaceSlug,
      team: p.team ?? null,
      services: p.services,
      environments: p.environments,
      created: iso(p.created_at),
      updated: iso(p.updated_at),
    };
  }

  async projects(userId: string, slug: string) {
    const { workspace } = await this.scope.workspace(userId, slug);
    return (await this.repo.projects(workspace.id)).map((p) => this.toProject(workspace.slug, p));
  }

  async project(userId: string, slug: string, projectSlug: string) {
    const { workspace, project } = await this.scope.project(userId, slug, projectSlug);
    const [row] = await this.repo.projects(workspace.id, project.slug);
    return this.toProject(workspace.slug, row!);
  }

  /** Renames a project or moves it into (or out of) a team of the same workspace. */
  /** `mayChangeInheritance` checks a change of the configuration the project inherits (its team). */
  async updateProject(
    userId: string,
    slug: string,
    projectSlug: string,
    input: { name?: string; team?: string | null },
    mayChangeInheritance: (projectId: string) => Promise<void>,
  ) {
    const { workspace, project } = await this.scope.project(userId, slug, projectSlug);
    const changes: { name?: string; team_id?: string | null } = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.team === null) changes.team_id = null;
    else if (input.team !== undefined) changes.team_id = (await this.scope.team(userId, slug, input.team)).team.id;
    if (changes.team_id !== undefined && changes.team_id !== project.team_id) {
      await mayChangeInheritance(project.id);
    }
    await updateProjectRecord(this.db, project.id, changes);
    return this.project(userId, workspace.slug, project.slug);
  }
}
