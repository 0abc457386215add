import type { Wired } from '../../platform/wiring.js';
import type { UsersRepository } from './users.repository.js';
import { usersRoutes } from './users.routes.js';
import { UsersService } from './users.service.js';

export function wireUsers(deps: { repository: UsersRepository }) {
  const users = new UsersService(deps.repository);
  return { users, routes: [usersRoutes(users)] } satisfies Wired;
}
