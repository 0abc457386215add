import { iso } from '../../platform/http/schemas.js';

/**
 * The API's workspace words over the one model: a workspace is an organization seen by its
 * slug, a workspace's `services` are its projects' applications. Pure reshaping, no lookups.
 */

interface OrganizationView {
  id: string;
  name: string;
  slug: string;
  member_count: number;
  project_count: number;
  application_count: number;
  created: string;
  updated: string;
}

/** An organization with its counts (from `OrganizationsService.list` or `.describe`) as a workspace. */
export function toWorkspace(org: OrganizationView) {
  return {
    id: org.id,
    name: org.name,
    slug: org.slug,
    member_count: org.member_count,
    project_count: org.project_count,
    service_count: org.application_count,
    created: org.created,
    updated: org.updated,
  };
}

/** One workspace with its members (`OrganizationsService.detail`); a hidden e-mail reads `""`. */
export function toWorkspaceDetail(
  org: OrganizationView & { members: Array<{ user_id: string; username: string; email?: string; admin: boolean }> },
) {
  return { ...toWorkspace(org), members: org.members.map(toWorkspaceMember) };
}

export function toWorkspaceMember(m: { user_id: string; username: string; email?: string; admin: boolean }) {
  return { user_id: m.user_id, username: m.username, email: m.email ?? '', admin: m.admin };
}

/** A project with its team (from `ProjectsService.listInOrganization`) as seen from its workspace. */
export function toWorkspaceProject(
  organization: { slug: string; name: string },
  project: {
    id: string;
    name: string;
    slug: string;
    team: string | null;
    applications: string[];
    environments: string[];
    created_at: Date;
    updated_at: Date;
  },
) {
  return {
    id: project.id,
    name: project.name,
    slug: project.slug,
    workspace: organization.slug,
    workspace_slug: organization.slug,
    workspace_name: organization.name,
    team: project.team ?? null,
    services: project.applications,
    environments: project.environments,
    service_count: project.applications.length,
    created: iso(project.created_at),
    updated: iso(project.updated_at),
  };
}

/** `POST /workspaces/{workspace}/members` answers the member it added, picked from the organization's members. */
export function addedMember<M extends { username: string; email: string }>(members: M[], usernameOrEmail: string): M {
  const wanted = usernameOrEmail.toLowerCase();
  return members.find((m) => m.username.toLowerCase() === wanted || m.email.toLowerCase() === wanted)!;
}
