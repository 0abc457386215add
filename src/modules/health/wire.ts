import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import { doctorRoutes } from './doctor.routes.js';
import { healthRoutes } from './health.routes.js';

/** `/v1/integrations/health` (the API keeps its path): which component of this process is up; `/integrations/doctor`: the server's checks. */
export function wireHealth(deps: { ctx: AppContext }) {
  return { routes: [healthRoutes(deps.ctx), doctorRoutes(deps.ctx)] } satisfies Wired;
}
