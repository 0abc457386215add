import { Type } from 'typebox';
import { commonErrorResponses, WorkspaceProjectParams } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ConfigurationsService, ScopedConfig } from '../../modules/configurations/index.js';
import type { EnvironmentsService } from '../../modules/environments/index.js';
import { CreateEnvironmentBody, Environment, EnvParams, UpdateEnvironmentBody } from '../../modules/environments/index.js';
import { registerScopedConfigRoutes } from './scoped-config.routes.js';

const BASE = '/workspaces/:workspace/projects/:project/envs';

/** A project's environments and their configuration (a service's, resolved: src/adapters/ancla/services.routes.ts). */
export function environmentsRoutes(envs: EnvironmentsService, scoped: ScopedConfig, config: ConfigurationsService) {
  const tags = ['Environments'];
  return async (app: App) => {
    app.get(
      BASE,
      {
        schema: {
          tags,
          summary: "The project's environments",
          params: WorkspaceProjectParams,
          response: { 200: Type.Array(Environment), ...commonErrorResponses },
        },
      },
      async (request) => envs.list(currentUser(request).id, request.params.workspace, request.params.project),
    );

    app.post(
      BASE,
      {
        schema: {
          tags,
          summary: 'Create an environment (a protected one: admins)',
          params: WorkspaceProjectParams,
          body: CreateEnvironmentBody,
          response: { 201: Environment, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await envs.create(currentUser(request).id, request.params.workspace, request.params.project, request.body)),
    );

    app.get(
      `${BASE}/:env`,
      {
        schema: { tags, summary: 'An environment', params: EnvParams, response: { 200: Environment, ...commonErrorResponses } },
      },
      async (request) => envs.get(currentUser(request).id, request.params.workspace, request.params.project, request.params.env),
    );

    app.patch(
      `${BASE}/:env`,
      {
        schema: {
          tags,
          summary: 'Change an environment: name, type, branch, protection (admins), per-service process counts and pod classes',
          params: EnvParams,
          body: UpdateEnvironmentBody,
          response: { 200: Environment, ...commonErrorResponses },
        },
      },
      async (request) =>
        envs.update(currentUser(request).id, request.params.workspace, request.params.project, request.params.env, request.body),
    );

    app.delete(
      `${BASE}/:env`,
      {
        schema: {
          tags,
          summary:
            'Delete an environment (not production; a protected one: organization admins). Its instances stop; its records stay readable for PREVIEW_RETENTION_HOURS',
          params: EnvParams,
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await envs.remove(currentUser(request).id, request.params.workspace, request.params.project, request.params.env);
        return reply.code(204).send(null);
      },
    );

    // A service's configuration in an environment (resolved view included): src/adapters/ancla/services.routes.ts.

    registerScopedConfigRoutes(app, {
      prefix: `${BASE}/:env`,
      params: EnvParams,
      tags,
      label: 'environment',
      config,
      scoped,
      scopeOf: async (params, userId) => ({
        scope: 'environment',
        scopeId: (await envs.scope.environment(userId, params.workspace!, params.project!, params.env!)).environment.id,
      }),
    });
  };
}
