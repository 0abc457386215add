import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { UsersService } from '../users/index.js';
import type { AuthRepository } from './auth.repository.js';
import { authRoutes } from './auth.routes.js';
import { AuthService } from './auth.service.js';

/** Sessions and API keys; expired ones are pruned by the job workers' sweep. */
export function wireAuth(deps: { ctx: AppContext; repository: AuthRepository; users: UsersService }) {
  const auth = new AuthService(deps.ctx, deps.repository, deps.users);
  return { auth, routes: [authRoutes(auth)], sweepers: [{ sweep: () => auth.pruneExpired() }] } satisfies Wired;
}
