import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import { healthRoutes } from './health.routes.js';

export function wireIntegrations(deps: { ctx: AppContext }) {
  return { routes: [healthRoutes(deps.ctx)] } satisfies Wired;
}
