import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { Db } from '../db/database.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { Notifications } from '../db/notifications.js';
import { StartupError } from '../startup-error.js';
import { caddyAdminEndpoint, caddyAdminOnTcpMessage } from './caddy-admin.js';
import { CaddyDriver } from './caddy-driver.js';
import { EdgeDirectory } from './edge-directory.js';
import type { EdgeDriver, EdgeRequestLogger } from './edge-driver.js';
import { EdgeNode } from './edge-routes.js';
import { RequestStats } from './request-stats.js';
import { RouterServer } from './router-server.js';

export type { EdgeDriver, EdgeRequestLogger } from './edge-driver.js';
export { EdgeDirectory } from './edge-directory.js';
export { RouterServer } from './router-server.js';
export { CaddyDriver } from './caddy-driver.js';
export { RouteTable, type Upstream } from './route-table.js';
export { RequestStats, readRequestStats, foldOldRequestStats } from './request-stats.js';

/** The edge EDGE_DRIVER names: the built-in router (default) or Caddy through its admin API. */
export function createEdgeDriver(config: Config): EdgeDriver {
  if (config.EDGE_DRIVER === 'caddy') {
    if (!caddyAdminEndpoint(config.CADDY_ADMIN_URL).socketPath && !config.CADDY_ADMIN_ALLOW_TCP)
      throw new StartupError(caddyAdminOnTcpMessage(config.CADDY_ADMIN_URL));
    return new CaddyDriver({
      adminUrl: config.CADDY_ADMIN_URL,
      host: config.ROUTER_HOST,
      port: config.ROUTER_PORT,
      httpsPort: config.ROUTER_HTTPS_PORT,
      certificates: config.EDGE_CERTIFICATES,
      acme: config.ACME_DIRECTORY_URL
        ? { directoryUrl: config.ACME_DIRECTORY_URL, email: config.ACME_EMAIL, caFile: config.ACME_CA_FILE }
        : undefined,
      accessLogDirectory: join(config.dataDir, 'edge'),
      accessLogGroupId: config.CADDY_ACCESS_LOG_GID,
    });
  }
  return new RouterServer({ host: config.ROUTER_HOST, port: config.ROUTER_PORT, httpsPort: config.ROUTER_HTTPS_PORT });
}

/**
 * A process in the `edge` role: only the edge, fed from PostgreSQL (routes the workers
 * publish, custom domains, certificates), so application traffic never shares an event loop
 * with the API, builds or deployments.
 */
export async function startEdgeProcess(
  config: Config,
  deps: { db: Db; secrets: SecretBox; databaseUrl: string; logger: EdgeRequestLogger },
): Promise<{ driver: EdgeDriver; close(): Promise<void> }> {
  const driver = createEdgeDriver(config);
  driver.useDirectory(new EdgeDirectory(deps.db, deps.secrets));
  driver.useStats(new RequestStats(deps.db, config.REQUEST_STATS_FLUSH_MS));
  driver.useLogger(deps.logger);
  const notifications = new Notifications(deps.databaseUrl, (err) => deps.logger.warn({ err }, 'edge notification connection lost'));
  const node = new EdgeNode(deps.db, driver, notifications, {
    drainTimeoutMs: config.ROUTER_DRAIN_TIMEOUT_MS,
    onError: (err) => deps.logger.warn({ err }, 'edge route sync failed'),
  });
  await driver.listen();
  try {
    await node.start();
  } catch (err) {
    await driver.close();
    await notifications.close();
    throw err;
  }
  return {
    driver,
    async close() {
      await node.stop();
      await notifications.close();
      await driver.close();
    },
  };
}
