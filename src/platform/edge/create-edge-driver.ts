import { join } from 'node:path';
import type { Config } from '../../config.js';
import { StartupError } from '../startup-error.js';
import { caddyAdminEndpoint, caddyAdminOnTcpMessage } from './caddy-admin.js';
import { CaddyDriver } from './caddy-driver.js';
import type { EdgeDriver } from './edge-driver.js';
import { RouterServer } from './router-server.js';

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
  return new RouterServer({
    host: config.ROUTER_HOST,
    port: config.ROUTER_PORT,
    httpsPort: config.ROUTER_HTTPS_PORT,
    retryWindowMs: config.ROUTER_RETRY_WINDOW_MS,
  });
}
