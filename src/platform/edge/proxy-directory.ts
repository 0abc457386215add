import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

type ProxyName = 'haproxy' | 'nginx';

/** The configuration file each proxy's driver writes in its directory. */
const CONFIG_FILE: Record<ProxyName, string> = { haproxy: 'haproxy.cfg', nginx: 'nginx.conf' };

/**
 * Where the HAProxy or nginx driver keeps the proxy's configuration, pid file and sockets.
 *
 * A process on the embedded database owns its DATA_DIR alone (the database's own lock keeps a second one out):
 * `DATA_DIR/edge/haproxy`, as before, so a restart with another ROUTER_PORT adopts the running proxy and moves it.
 *
 * Processes on an external database (`shared`) may share a DATA_DIR: workers on one machine do, each with its own
 * router ports (docs/operations.md: a build's artifact is read by whichever worker deploys it). With one directory,
 * the second worker adopted the first one's proxy and reloaded it onto its own ports and routes. So each router port
 * gets its own (`DATA_DIR/edge/haproxy-8081`), except that the unkeyed directory of an earlier version stays in use
 * by the process whose port its configuration listens on: an upgrade adopts the proxy already serving that port.
 */
export function proxyDirectory(dataDir: string, proxy: ProxyName, port: number, shared: boolean): string {
  const unkeyed = join(dataDir, 'edge', proxy);
  if (!shared || listensOn(join(unkeyed, CONFIG_FILE[proxy]), port)) return unkeyed;
  return `${unkeyed}-${port}`;
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
