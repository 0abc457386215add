import type { Db } from '../../platform/db/database.js';
import type { Wired } from '../../platform/wiring.js';
import { metricsRoutes } from './metrics.routes.js';
import { PlatformMetrics } from './platform-metrics.js';

/** `/metrics` (outside /v1: the HTTP app registers `metricsRoutes` itself, with the request counter). */
/** `dataDir`: whose filesystem's free space the gauge reports. */
export function wireMetrics(deps: { db: Db; token: string | undefined; dataDir: string }) {
  const metrics = new PlatformMetrics(deps.db, deps.dataDir);
  return { metrics, rootRoutes: [metricsRoutes(metrics, deps.token)], routes: [] } satisfies Wired;
}
