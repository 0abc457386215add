import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import { registerScopedConfigRoutes } from './scoped-config.routes.js';
import type { OrganizationScope, OrganizationsService } from '../../modules/organizations/index.js';
import type { ProjectsService } from '../../modules/projects/index.js';
import { addedMember, toWorkspace, toWorkspaceDetail, toWorkspaceProject } from './workspaces.mapping.js';
import {
  AddWorkspaceMemberBody,
  CreateWorkspaceBody,
  CreateWorkspaceProjectBody,
  UpdateWorkspaceBody,
  Member,
  UpdateWorkspaceProjectBody,
  Workspace,
  WorkspaceMemberParams,
  WorkspaceParams,
  WorkspaceProject,
  WorkspaceProjectParams,
} from './workspaces.schemas.js';

/** `/workspaces`: organizations by slug, their members, projects and configuration. */
export function workspacesRoutes(deps: {
  organizations: OrganizationsService;
  scope: OrganizationScope;
  projects: ProjectsService;
  scopedConfig: ScopedConfig;
  config: ConfigurationsService;
}) {
  const { organizations, scope, projects, scopedConfig: scoped, config } = deps;
  const tags = ['Workspaces'];
  return async (app: App) => {
    app.get(
      '/workspaces',
      {
        schema: { tags, summary: "The caller's workspaces", response: { 200: Type.Array(Workspace), ...commonErrorResponses } },
      },
      async (request) => (await organizations.list(currentUser(request).id)).map(toWorkspace),
    );

    app.post(
      '/workspaces',
      {
        schema: {
          tags,
          summary: 'Create a workspace (an organization; the caller becomes its admin)',
          body: CreateWorkspaceBody,
          response: { 201: Workspace, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const { personal: _ignored, ...input } = request.body;
        return reply.code(201).send(toWorkspaceDetail(await organizations.create(currentUser(request), input)));
      },
    );

    app.get(
      '/workspaces/:workspace',
      {
        schema: { tags, summary: 'A workspace', params: WorkspaceParams, response: { 200: Workspace, ...commonErrorResponses } },
      },
      async (request) => toWorkspaceDetail(await organizations.detail(currentUser(request).id, request.params.workspace)),
    );

    app.patch(
      '/workspaces/:workspace',
      {
        schema: {
          tags,
          summary: 'Rename a workspace (admins; its slug stays)',
          params: WorkspaceParams,
          body: UpdateWorkspaceBody,
          response: { 200: Workspace, ...commonErrorResponses },
        },
      },
      async (request) =>
        toWorkspaceDetail(await organizations.rename(currentUser(request).id, request.params.workspace, request.body.name)),
    );

    app.delete(
      '/workspaces/:workspace',
      {
        schema: {
          tags,
          summary: 'Delete a workspace that has no project left (admins): its members, teams and configuration go with it',
          params: WorkspaceParams,
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await organizations.deleteEmpty(currentUser(request).id, request.params.workspace);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/workspaces/:workspace/members',
      {
        schema: {
          tags,
          summary: "The workspace's members",
          params: WorkspaceParams,
          response: { 200: Type.Array(Member), ...commonErrorResponses },
        },
      },
      async (request) => (await organizations.detail(currentUser(request).id, request.params.workspace)).members,
    );

    app.post(
      '/workspaces/:workspace/members',
      {
        schema: {
          tags,
          summary: 'Add a member (admins)',
          params: WorkspaceParams,
          body: AddWorkspaceMemberBody,
          response: { 201: Member, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const detail = await organizations.addMember(currentUser(request).id, request.params.workspace, request.body);
        return reply.code(201).send(addedMember(detail.members, request.body.username));
      },
    );

    app.delete(
      '/workspaces/:workspace/members/:user_id',
      {
        schema: {
          tags,
          summary: 'Remove a member (admins, or a member leaving)',
          params: WorkspaceMemberParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => organizations.removeMember(currentUser(request).id, request.params.workspace, request.params.user_id),
    );

    registerScopedConfigRoutes(app, {
      prefix: '/workspaces/:workspace',
      params: WorkspaceParams,
      tags,
      label: 'workspace',
      config,
      scoped,
      scopeOf: async (params, userId) => ({
        scope: 'organization',
        scopeId: (await scope.organization(userId, params.workspace!)).organization.id,
      }),
    });

    app.get(
      '/workspaces/:workspace/projects',
      {
        schema: {
          tags,
          summary: "The workspace's projects with their teams",
          params: WorkspaceParams,
          response: { 200: Type.Array(WorkspaceProject), ...commonErrorResponses },
        },
      },
      async (request) => {
        const { organization, projects: list } = await projects.listInOrganization(currentUser(request).id, request.params.workspace);
        return list.map((p) => toWorkspaceProject(organization, p));
      },
    );

    app.post(
      '/workspaces/:workspace/projects',
      {
        schema: {
          tags,
          summary: 'Create a project in the workspace (it starts with its `production` environment)',
          params: WorkspaceParams,
          body: CreateWorkspaceProjectBody,
          response: { 201: WorkspaceProject, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const userId = currentUser(request).id;
        const { organization } = await scope.organization(userId, request.params.workspace);
        const created = await projects.create(userId, { ...request.body, organization_id: organization.id });
        const { project } = await projects.findInOrganization(userId, organization.slug, created.slug);
        return reply.code(201).send(toWorkspaceProject(organization, project));
      },
    );

    app.get(
      '/workspaces/:workspace/projects/:project',
      {
        schema: {
          tags,
          summary: 'A project of the workspace',
          params: WorkspaceProjectParams,
          response: { 200: WorkspaceProject, ...commonErrorResponses },
        },
      },
      async (request) => {
        const { workspace, project: slug } = request.params;
        const { organization, project } = await projects.findInOrganization(currentUser(request).id, workspace, slug);
        return toWorkspaceProject(organization, project);
      },
    );

    app.patch(
      '/workspaces/:workspace/projects/:project',
      {
        schema: {
          tags,
          summary: 'Rename a project or set its team (`team: null` for none)',
          params: WorkspaceProjectParams,
          body: UpdateWorkspaceProjectBody,
          response: { 200: WorkspaceProject, ...commonErrorResponses },
        },
      },
      async (request) => {
        const userId = currentUser(request).id;
        // Another team means other inherited configuration: the same rule as a project-scope write.
        const { organization, project } = await projects.update(
          userId,
          request.params.workspace,
          request.params.project,
          request.body,
          (projectId) => config.authorizeWrite(userId, { scope: 'project', scopeId: projectId }),
        );
        return toWorkspaceProject(organization, project);
      },
    );

    app.delete(
      '/workspaces/:workspace/projects/:project',
      {
        schema: {
          tags,
          summary: 'Delete a project that has no service (admins): its environments and configuration go with it',
          params: WorkspaceProjectParams,
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await projects.deleteEmpty(currentUser(request).id, request.params.workspace, request.params.project);
        return reply.code(204).send(null);
      },
    );

    registerScopedConfigRoutes(app, {
      prefix: '/workspaces/:workspace/projects/:project',
      params: WorkspaceProjectParams,
      tags,
      label: 'project',
      config,
      scoped,
      scopeOf: async (params, userId) => ({
        scope: 'project',
        scopeId: (await scope.project(userId, params.workspace!, params.project!)).project.id,
      }),
    });
  };
}
