import { Type } from 'typebox';
import type { App } from '../../platform/http/types.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import { requireSiteAdmin } from '../../platform/http/principal.js';
import { UsersService } from './users.service.js';
import { CreateUserBody, User } from './users.schemas.js';

/** Beyond the spec (decisions.md): site administrators manage users. */
export function usersRoutes(users: UsersService) {
  return async (app: App) => {
    app.get(
      '/users',
      {
        schema: { tags: ['Users'], summary: 'List users (site admins)', response: { 200: Type.Array(User), ...commonErrorResponses } },
      },
      async (request) => {
        requireSiteAdmin(request);
        return users.list();
      },
    );

    app.post(
      '/users',
      {
        schema: {
          tags: ['Users'],
          summary: 'Create a user (site admins)',
          body: CreateUserBody,
          response: { 201: User, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        requireSiteAdmin(request);
        return reply.code(201).send(await users.create(request.body));
      },
    );
  };
}
