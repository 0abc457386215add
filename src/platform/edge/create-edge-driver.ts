import { join } from 'node:path';
import { findHaproxy, findNginx, type Config } from '../../config.js';
import { StartupError } from '../startup-error.js';
import { caddyAdminEndpoint, caddyAdminOnTcpMessage } from './caddy-admin.js';
import { CaddyDriver } from './caddy-driver.js';
import type { EdgeDriver } from './edge-driver.js';
import { HaproxyDriver } from './haproxy-driver.js';
import { NginxDriver } from './nginx-driver.js';
import { RouterServer } from './router-server.js';

/** The edge EDGE_DRIVER names: HAProxy or nginx (started and reloaded by the platform), the built-in router, or Caddy through its admin API. */
export function createEdgeDriver(config: Config): EdgeDriver {
  if (config.EDGE_DRIVER === 'haproxy') {
    const binary = findHaproxy();
    if (!binary) throw new StartupError('EDGE_DRIVER=haproxy: HAProxy is not installed (apt-get install haproxy)');
    if (config.ROUTER_PORT === 0 || config.ROUTER_HTTPS_PORT === 0)
      throw new StartupError('EDGE_DRIVER=haproxy needs fixed ports: ROUTER_PORT and ROUTER_HTTPS_PORT cannot be 0');
    return new HaproxyDriver({
      binary,
      directory: join(config.dataDir, 'edge', 'haproxy'),
      host: config.ROUTER_HOST,
      port: config.ROUTER_PORT,
      httpsPort: config.ROUTER_HTTPS_PORT,
      workerUser: config.EDGE_HAPROXY_USER,
    });
  }
  if (config.EDGE_DRIVER === 'nginx') {
    const binary = findNginx();
    if (!binary) throw new StartupError('EDGE_DRIVER=nginx: nginx is not installed (apt-get install nginx)');
    if (config.ROUTER_PORT === 0 || config.ROUTER_HTTPS_PORT === 0)
      throw new StartupError('EDGE_DRIVER=nginx needs fixed ports: ROUTER_PORT and ROUTER_HTTPS_PORT cannot be 0');
    return new NginxDriver({
      binary,
      directory: join(config.dataDir, 'edge', 'nginx'),
      host: config.ROUTER_HOST,
      port: config.ROUTER_PORT,
      httpsPort: config.ROUTER_HTTPS_PORT,
      workerUser: config.EDGE_NGINX_USER,
    });
  }
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
