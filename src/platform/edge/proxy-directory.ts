import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

type ProxyName = 'haproxy' | 'nginx';

/** The configuration file each proxy's driver writes in its directory. */
const CONFIG_FILE: Record<ProxyName, string> = { haproxy: 'haproxy.cfg', nginx: 'nginx.conf' };

/**
 * Where the HAProxy or nginx driver keeps the proxy's configuration, pid file and sockets: one directory per
 * HTTP router port (`DATA_DIR/edge/haproxy-8081`). Workers on one machine share a DATA_DIR (a build's artifact is
 * read by whichever worker deploys it: docs/operations.md), each with its own router ports; with one directory
 * per proxy, the second worker adopted the first one's proxy and reloaded it with its own ports and routes.
 *
 * A proxy started by an earlier version (`DATA_DIR/edge/haproxy`) is still adopted by the process serving its
 * port: that directory is used while it holds a configuration listening on `port`, so an upgrade neither starts a
 * second proxy on a port in use nor leaves the running one unmanaged.
 */
export function proxyDirectory(dataDir: string, proxy: ProxyName, port: number): string {
  const unkeyed = join(dataDir, 'edge', proxy);
  return listensOn(join(unkeyed, CONFIG_FILE[proxy]), port) ? unkeyed : `${unkeyed}-${port}`;
}

/** Whether the configuration the driver wrote there has a `bind` (HAProxy) or `listen` (nginx) line on `port`. */
function listensOn(configPath: string, port: number): boolean {
  try {
    // Written by the platform in a directory only it enters; still, a symlink is not followed.
    if (!lstatSync(configPath).isFile()) return false;
    return new RegExp(`^\\s*(bind|listen)\\s+(\\S*:)?${port}(\\s|;|$)`, 'm').test(readFileSync(configPath, 'utf8'));
  } catch {
    return false;
  }
}
