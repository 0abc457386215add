import { Type } from 'typebox';
import { commonErrorResponses, Ok, WorkspaceParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { TeamsService } from '../../modules/teams/index.js';
import { AddTeamMemberBody, CreateTeamBody, Team, TeamMemberParams, TeamParams } from '../../modules/teams/index.js';
import { registerScopedConfigRoutes } from './scoped-config.routes.js';

/** `/workspaces/{workspace}/teams`: teams, their members and their configuration. */
export function teamsRoutes(teams: TeamsService, scoped: ScopedConfig, config: ConfigurationsService) {
  const tags = ['Teams'];
  return async (app: App) => {
    app.get(
      '/workspaces/:workspace/teams',
      {
        schema: {
          tags,
          summary: "The workspace's teams",
          params: WorkspaceParams,
          response: { 200: Type.Array(Team), ...commonErrorResponses },
        },
      },
      async (request) => teams.list(currentUser(request).id, request.params.workspace),
    );

    app.post(
      '/workspaces/:workspace/teams',
      {
        schema: {
          tags,
          summary: 'Create a team (admins)',
          params: WorkspaceParams,
          body: CreateTeamBody,
          response: { 201: Team, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await teams.create(currentUser(request).id, request.params.workspace, request.body)),
    );

    app.get(
      '/workspaces/:workspace/teams/:team',
      {
        schema: { tags, summary: 'A team', params: TeamParams, response: { 200: Team, ...commonErrorResponses } },
      },
      async (request) => teams.get(currentUser(request).id, request.params.workspace, request.params.team),
    );

    app.delete(
      '/workspaces/:workspace/teams/:team',
      {
        schema: {
          tags,
          summary: 'Delete a team and its configuration; its projects stay, without a team (admins)',
          params: TeamParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => teams.delete(currentUser(request).id, request.params.workspace, request.params.team),
    );

    app.post(
      '/workspaces/:workspace/teams/:team/members',
      {
        schema: {
          tags,
          summary: 'Add a workspace member to the team (admins)',
          params: TeamParams,
          body: AddTeamMemberBody,
          response: { 200: Team, ...commonErrorResponses },
        },
      },
      async (request) => teams.addMember(currentUser(request).id, request.params.workspace, request.params.team, request.body),
    );

    app.delete(
      '/workspaces/:workspace/teams/:team/members/:user_id',
      {
        schema: {
          tags,
          summary: 'Remove a member from the team (admins)',
          params: TeamMemberParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => teams.removeMember(currentUser(request).id, request.params.workspace, request.params.team, request.params.user_id),
    );

    registerScopedConfigRoutes(app, {
      prefix: '/workspaces/:workspace/teams/:team',
      params: TeamParams,
      tags,
      label: 'team',
      config,
      scoped,
      scopeOf: async (params, userId) => ({
        scope: 'team',
        scopeId: (await teams.scope.team(userId, params.workspace!, params.team!)).team.id,
      }),
      mayWrite: async (_ref, userId, params) => teams.requireConfigWriter(userId, params.workspace!, params.team!),
    });
  };
}
