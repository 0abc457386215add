import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ConfigurationsService } from '../configurations/index.js';
import { ScopedConfig } from '../configurations/index.js';
import { registerScopedConfigRoutes } from '../configurations/index.js';
import {
  AddWorkspaceMemberBody,
  CreateWorkspaceBody,
  Member,
  UpdateWorkspaceProjectBody,
  Workspace,
  WorkspaceMemberParams,
  WorkspaceParams,
  WorkspaceProject,
  WorkspaceProjectParams,
} from './workspaces.schemas.js';
import { WorkspacesService } from './workspaces.service.js';

/** `/workspaces`: organizations by slug, their members, projects and configuration. */
export function workspacesRoutes(workspaces: WorkspacesService, scoped: ScopedConfig, config: ConfigurationsService) {
  const tags = ['Workspaces'];
  return async (app: App) => {
    app.get(
      '/workspaces',
      {
        schema: { tags, summary: "The caller's workspaces", response: { 200: Type.Array(Workspace), ...commonErrorResponses } },
      },
      async (request) => workspaces.list(currentUser(request).id),
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
      async (request, reply) => reply.code(201).send(await workspaces.create(currentUser(request), request.body)),
    );

    app.get(
      '/workspaces/:workspace',
      {
        schema: { tags, summary: 'A workspace', params: WorkspaceParams, response: { 200: Workspace, ...commonErrorResponses } },
      },
      async (request) => workspaces.get(currentUser(request).id, request.params.workspace),
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
      async (request) => workspaces.members(currentUser(request).id, request.params.workspace),
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
      async (request, reply) =>
        reply.code(201).send(await workspaces.addMember(currentUser(request).id, request.params.workspace, request.body)),
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
      async (request) => workspaces.removeMember(currentUser(request).id, request.params.workspace, request.params.user_id),
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
        scopeId: (await workspaces.scope.workspace(userId, params.workspace!)).workspace.id,
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
      async (request) => workspaces.projects(currentUser(request).id, request.params.workspace),
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
      async (request) => workspaces.project(currentUser(request).id, request.params.workspace, request.params.project),
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
        return workspaces.updateProject(userId, request.params.workspace, request.params.project, request.body, (projectId) =>
          config.authorizeWrite(userId, { scope: 'project', scopeId: projectId }),
        );
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
        scopeId: (await workspaces.scope.project(userId, params.workspace!, params.project!)).project.id,
      }),
    });
  };
}
