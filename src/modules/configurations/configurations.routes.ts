import { Type } from 'typebox';
import { commonErrorResponses, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import {
  AppConfigItemParams,
  AppConfigParams,
  BulkConfigBody,
  BulkConfigResult,
  ConfigVariable,
  CreateConfigBody,
  UpdateConfigBody,
} from './configurations.schemas.js';
import type { ConfigurationsService, VariableIntent } from './configurations.service.js';
import type { FastifyRequest } from 'fastify';

/**
 * How these routes check the caller may use an application: the applications module's service
 * satisfies it (a port, because applications sit above configurations in the module layering).
 */
export interface ApplicationAccess {
  authorize(userId: string, applicationId: string): Promise<{ id: string }>;
}

/** Per-application configuration: the `application` scope. */
export function configurationsRoutes(apps: ApplicationAccess, config: ConfigurationsService) {
  const tags = ['Configuration'];
  const scopeOf = async (request: FastifyRequest, applicationId: string) => {
    const app = await apps.authorize(currentUser(request).id, applicationId);
    return { scope: 'application' as const, scopeId: app.id };
  };
  const writeScopeOf = async (request: FastifyRequest, applicationId: string, intents: VariableIntent[] = []) => {
    const scope = await scopeOf(request, applicationId);
    await config.authorizeWrite(currentUser(request).id, scope, intents);
    return scope;
  };
  return async (app: App) => {
    app.get(
      '/configurations/:application_id',
      {
        schema: {
          tags,
          summary: "An application's variables (secrets masked)",
          params: AppConfigParams,
          response: { 200: Type.Array(ConfigVariable), ...commonErrorResponses },
        },
      },
      // PostgreSQL writes the answer, sent as it is (`as never`: the typed reply expects the schema's objects).
      async (request, reply) =>
        reply
          .type('application/json; charset=utf-8')
          .send((await config.listJsonForApplication(currentUser(request).id, request.params.application_id)) as never),
    );

    app.get(
      '/configurations/:application_id/:config_id',
      {
        schema: { tags, summary: 'One variable', params: AppConfigItemParams, response: { 200: ConfigVariable, ...commonErrorResponses } },
      },
      async (request) => config.get(await scopeOf(request, request.params.application_id), request.params.config_id),
    );

    app.post(
      '/configurations/:application_id',
      {
        schema: {
          tags,
          summary: 'Create a variable',
          params: AppConfigParams,
          body: CreateConfigBody,
          response: { 201: ConfigVariable, ...commonErrorResponses },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await config.create(await writeScopeOf(request, request.params.application_id, [request.body]), request.body)),
    );

    app.post(
      '/configurations/:application_id/bulk',
      {
        schema: {
          tags,
          summary: 'Set many variables from an object and/or dotenv text',
          params: AppConfigParams,
          body: BulkConfigBody,
          response: { 200: BulkConfigResult, ...commonErrorResponses },
        },
      },
      // Its checks (authorize, authorizeWrite, the scope's limits) are read in one statement: the configuration set's hot path.
      async (request) => config.bulkForApplication(currentUser(request).id, request.params.application_id, request.body),
    );

    app.patch(
      '/configurations/:application_id/:config_id',
      {
        schema: {
          tags,
          summary: 'Change a variable',
          params: AppConfigItemParams,
          body: UpdateConfigBody,
          response: { 200: ConfigVariable, ...commonErrorResponses },
        },
      },
      async (request) =>
        config.update(
          await writeScopeOf(request, request.params.application_id, [{ ...request.body, id: request.params.config_id }]),
          request.params.config_id,
          request.body,
        ),
    );

    app.delete(
      '/configurations/:application_id/:config_id',
      {
        schema: { tags, summary: 'Delete a variable', params: AppConfigItemParams, response: { 200: Ok, ...commonErrorResponses } },
      },
      async (request) => config.delete(await writeScopeOf(request, request.params.application_id), request.params.config_id),
    );
  };
}
