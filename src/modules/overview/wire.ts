import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { OrganizationAccess } from '../organizations/index.js';
import { overviewRoutes } from './overview.routes.js';
import { OverviewService } from './overview.service.js';

/** The home page's read across applications (no table of its own: read-only joins over the pipeline's records). */
export function wireOverview(deps: { ctx: AppContext; access: OrganizationAccess }) {
  const overview = new OverviewService(deps.ctx.db, deps.access);
  return { overview, routes: [overviewRoutes(overview)] } satisfies Wired;
}
