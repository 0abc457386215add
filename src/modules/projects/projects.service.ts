import { v7 as uuidv7 } from 'uuid';
import { conflict, isUniqueViolation, notFound } from '../../platform/errors.js';
import { iso } from '../../platform/http/schemas.js';
import { slugFor } from '../../platform/slug.js';
import type { OrganizationAccess, OrganizationScope } from '../organizations/index.js';
import type { ProjectsRepository } from './projects.repository.js';

type ProjectRow = NonNullable<Awaited<ReturnType<ProjectsRepository['findById']>>>;

const toSummary = (p: ProjectRow) => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  organization_id: p.organization_id,
  organization_slug: p.organization_slug,
  application_count: Number(p.application_count ?? 0),
  created: iso(p.created_at),
});

const toDetail = (p: ProjectRow) => ({ ...toSummary(p), organization_name: p.organization_name, updated: iso(p.updated_at) });

export class ProjectsService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly access: OrganizationAccess,
    private readonly scope: OrganizationScope,
  ) {}

  /** Every project of the caller's organizations (or of one of them, by slug), as the JSON text of the answer. */
  listJson(userId: string, filter: { organization?: string } = {}): Promise<string> {
    return this.projects.listJsonForUser(userId, filter.organization);
  }

  /** One page of that list, and whether another page follows. */
  async page(userId: string, query: { organization?: string; page: number; per_page: number }) {
    // One row more than the page tells whether a next page exists, without counting.
    const rows = await this.projects.listForUser(userId, query.organization, {
      limit: query.per_page + 1,
      offset: (query.page - 1) * query.per_page,
    });
    return { items: rows.slice(0, query.per_page).map(toSummary), hasMore: rows.length > query.per_page };
  }

  /** The project row, once the caller is known to be a member of its organization. */
  async resolve(userId: string, orgSlug: string, projectSlug: string) {
    await this.requireMemberOf(userId, orgSlug);
    const project = await this.projects.findRefBySlugs(orgSlug, projectSlug);
    if (!project) throw notFound('Project');
    return project;
  }

  /** 404 for an unknown organization, 403 for a caller outside it (in that order). */
  private async requireMemberOf(userId: string, orgSlug: string) {
    const org = await this.access.findBySlug(orgSlug);
    if (!org) throw notFound('Organization');
    await this.access.requireMember(userId, org.id);
  }

  async resolveById(userId: string, projectId: string) {
    const project = await this.projects.findById(projectId);
    if (!project) throw notFound('Project');
    await this.access.requireMember(userId, project.organization_id);
    return project;
  }

  async detail(userId: string, orgSlug: string, projectSlug: string) {
    // The one view that shows the application count: counted here only, not on every lookup inside the project.
    await this.requireMemberOf(userId, orgSlug);
    const project = await this.projects.findBySlugs(orgSlug, projectSlug);
    if (!project) throw notFound('Project');
    return toDetail(project);
  }

  async create(userId: string, input: { name: string; slug?: string; organization_id: string }) {
    const org = await this.access.findById(input.organization_id);
    if (!org) throw notFound('Organization');
    await this.access.requireMember(userId, org.id);
    const slug = slugFor(input.name, input.slug);
    try {
      const { id } = await this.projects.insert({ id: uuidv7(), organization_id: org.id, name: input.name, slug });
      return toDetail((await this.projects.findById(id))!);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A project with slug '${slug}' already exists in ${org.slug}`);
      throw err;
    }
  }

  /** Deletes a project without services (organization admins); 409 while it has one. */
  async deleteEmpty(userId: string, orgSlug: string, projectSlug: string) {
    const { organization, project } = await this.scope.project(userId, orgSlug, projectSlug);
    await this.scope.requireAdmin(userId, organization.id);
    if (!(await this.projects.deleteIfEmpty(project.id)))
      throw conflict(`${project.slug} still has services: delete them first (their instances and records stay otherwise)`);
  }

  /** The projects of an organization the caller belongs to, with their teams (see `listWithTeams`). */
  async listInOrganization(userId: string, orgSlug: string) {
    const { organization } = await this.scope.organization(userId, orgSlug);
    return { organization, projects: await this.projects.listWithTeams(organization.id) };
  }

  /** One project of an organization the caller belongs to, with its team (404 when absent there). */
  async findInOrganization(userId: string, orgSlug: string, projectSlug: string) {
    const { organization, project } = await this.scope.project(userId, orgSlug, projectSlug);
    const [row] = await this.projects.listWithTeams(organization.id, project.slug);
    return { organization, project: row! };
  }

  /**
   * Renames a project or moves it into (or out of) a team of the same organization (`team`: a
   * team slug, or null for none). `mayChangeInheritance` authorizes a change of the team, and so
   * of the configuration the project inherits.
   */
  async update(
    userId: string,
    orgSlug: string,
    projectSlug: string,
    input: { name?: string; team?: string | null },
    mayChangeInheritance: (projectId: string) => Promise<void>,
  ) {
    const { organization, project } = await this.scope.project(userId, orgSlug, projectSlug);
    const changes: { name?: string; team_id?: string | null } = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.team === null) changes.team_id = null;
    else if (input.team !== undefined) changes.team_id = (await this.scope.team(userId, orgSlug, input.team)).team.id;
    if (changes.team_id !== undefined && changes.team_id !== project.team_id) {
      await mayChangeInheritance(project.id);
    }
    await this.projects.update(project.id, changes);
    return this.findInOrganization(userId, organization.slug, project.slug);
  }
}
