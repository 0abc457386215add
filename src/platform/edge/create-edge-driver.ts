import { join } from 'node:path';
import type { EdgeSettings } from './edge-settings.js';
import { findHaproxy, findNginx } from '../../find-binary.js';
import { StartupError } from '../startup-error.js';
import type { EdgeDriver } from './edge-driver.js';
import { proxyDirectory } from './proxy-directory.js';

/**
 * The edge EDGE_DRIVER names: HAProxy or nginx (started and reloaded by the platform), the built-in router, or Caddy
 * through its admin API. Each driver's modules load only when it is the one chosen: a process holds one edge's code
 * (the built-in router's HTTP client, Caddy's name server…), not four (.dependency-cruiser.cjs `edge-drivers-only-when-chosen`).
 */
export async function createEdgeDriver(config: EdgeSettings): Promise<EdgeDriver> {
  if (config.EDGE_DRIVER === 'haproxy') {
    const binary = findHaproxy();
    if (!binary) throw new StartupError('EDGE_DRIVER=haproxy: HAProxy is not installed (apt-get install haproxy)');
    if (config.ROUTER_PORT === 0 || config.ROUTER_HTTPS_PORT === 0)
      throw new StartupError('EDGE_DRIVER=haproxy needs fixed ports: ROUTER_PORT and ROUTER_HTTPS_PORT cannot be 0');
    const [{ HaproxyDriver }, { HaproxyProcess }] = await Promise.all([import('./haproxy-driver.js'), import('./haproxy-process.js')]);
    const directory = chosenDirectory(config, 'haproxy', (dir) => new HaproxyProcess(binary, dir).masterPid());
    return new HaproxyDriver({
      binary,
      directory,
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
    const [{ NginxDriver }, { NginxProcess }] = await Promise.all([import('./nginx-driver.js'), import('./nginx-process.js')]);
    const directory = chosenDirectory(config, 'nginx', (dir) => new NginxProcess(binary, dir).masterPid());
    return new NginxDriver({
      binary,
      directory,
      host: config.ROUTER_HOST,
      port: config.ROUTER_PORT,
      httpsPort: config.ROUTER_HTTPS_PORT,
      workerUser: config.EDGE_NGINX_USER,
    });
  }
  if (config.EDGE_DRIVER === 'caddy') {
    const { caddyAdminEndpoint, caddyAdminOnTcpMessage } = await import('./caddy-admin.js');
    if (!caddyAdminEndpoint(config.CADDY_ADMIN_URL).socketPath && !config.CADDY_ADMIN_ALLOW_TCP)
      throw new StartupError(caddyAdminOnTcpMessage(config.CADDY_ADMIN_URL));
    const { CaddyDriver } = await import('./caddy-driver.js');
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
  const { RouterServer } = await import('./router-server.js');
  return new RouterServer({
    host: config.ROUTER_HOST,
    port: config.ROUTER_PORT,
    httpsPort: config.ROUTER_HTTPS_PORT,
    retryWindowMs: config.ROUTER_RETRY_WINDOW_MS,
  });
}

/** The proxy's directory (proxy-directory.ts); proxies left running in others are named at start. */
function chosenDirectory(config: EdgeSettings, proxy: 'haproxy' | 'nginx', masterIn: (dir: string) => number | null): string {
  const ports = [config.ROUTER_PORT, ...(config.ROUTER_HTTPS_PORT ? [config.ROUTER_HTTPS_PORT] : [])];
  const { dir, strays } = proxyDirectory(config.dataDir, proxy, ports, config.DATABASE_URL !== undefined, masterIn);
  for (const stray of strays)
    console.error(
      `[slipway] note: ${stray} is running and no Slipway process drives it: a worker's being restarted, or the proxy of a router port changed since (then stop it)`,
    );
  return dir;
}
