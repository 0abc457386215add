import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { UsersService } from '../users/index.js';
import type { AuthRepository } from './auth.repository.js';
import { authRoutes } from './auth.routes.js';
import { AuthService } from './auth.service.js';
import { SessionList } from './session-list.js';
import { sessionRoutes } from './sessions.routes.js';

/** Sessions and API keys; expired ones are pruned by the job workers' sweep. */
export function wireAuth(deps: { ctx: AppContext; repository: AuthRepository; users: UsersService }) {
  const auth = new AuthService(deps.ctx, deps.repository, deps.users);
  const sessions = new SessionList(deps.ctx.db, { idleMinutes: deps.ctx.config.SESSION_IDLE_MINUTES }, (userId) => auth.forgetUser(userId));
  return {
    auth,
    routes: [authRoutes(auth), sessionRoutes(sessions, deps.ctx.db)],
    sweepers: [{ sweep: () => auth.pruneExpired() }],
  } satisfies Wired;
}
