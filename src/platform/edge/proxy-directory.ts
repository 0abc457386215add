import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../startup-error.js';

type ProxyName = 'haproxy' | 'nginx';

/** The configuration file each proxy's driver writes in its directory. */
const CONFIG_FILE: Record<ProxyName, string> = { haproxy: 'haproxy.cfg', nginx: 'nginx.conf' };
/** Which Slipway process drives the proxy of a directory, and its router ports: `<pid> <start time> <port>,<port>`. */
const OWNER_FILE = 'owner';

export interface ProxyDirectoryChoice {
  dir: string;
  /** Proxies of other directories still running with no live Slipway process driving them (for a notice). */
  strays: string[];
}

/**
 * Where the HAProxy or nginx driver keeps the proxy's configuration, pid file and sockets.
 *
 * A process on the embedded database owns its DATA_DIR alone (the database's own lock keeps a second one out):
 * `DATA_DIR/edge/haproxy`, as before, so a restart with another ROUTER_PORT adopts the running proxy and moves it.
 *
 * Processes on an external database (`shared`) may share a DATA_DIR: workers on one machine do, each with its own
 * router ports (docs/operations.md: a build's artifact is read by whichever worker deploys it). With one directory,
 * the second worker adopted the first one's proxy and reloaded it onto its own ports and routes. So:
 * - the directory whose configuration listens on one of this process's ports is this process's, whatever its name
 *   (an earlier version's `edge/haproxy`, or the directory of a port changed since): its proxy is adopted and moved,
 *   so no proxy is left holding a port beside ours (HAProxy binds with SO_REUSEPORT: two would share its traffic);
 * - unless a live Slipway process other than this one drives that proxy: two processes were given the same port,
 *   which is refused;
 * - else a directory of its own per HTTP router port, `DATA_DIR/edge/haproxy-8081`.
 */
export function proxyDirectory(
  dataDir: string,
  proxy: ProxyName,
  ports: readonly number[],
  shared: boolean,
  masterIn: (dir: string) => number | null,
): ProxyDirectoryChoice {
  const unkeyed = join(dataDir, 'edge', proxy);
  if (!shared) return { dir: unkeyed, strays: [] };
  let chosen: string | undefined;
  const strays: string[] = [];
  for (const dir of proxyDirectories(dataDir, proxy)) {
    const master = masterIn(dir);
    const owner = ownerOf(dir);
    // Its ports as its owner recorded them; a proxy an earlier version started has only its configuration's.
    const itsPorts = owner.ports.length > 0 ? owner.ports : portsListenedOn(join(dir, CONFIG_FILE[proxy]));
    if (itsPorts.some((port) => ports.includes(port))) {
      if (master !== null && owner.live !== null && owner.live !== process.pid)
        throw new StartupError(
          `${proxy} of ${dir} (pid ${master}) serves router ports of this process (${ports.join(', ')}) for another Slipway process (pid ${owner.live}): ` +
            'each process sharing a DATA_DIR needs router ports of its own (ROUTER_PORT, ROUTER_HTTPS_PORT)',
        );
      if (chosen === undefined || master !== null) chosen = dir;
    } else if (master !== null && owner.live === null) strays.push(`${proxy} of ${dir} (pid ${master})`);
  }
  const dir = chosen ?? `${unkeyed}-${ports[0]}`;
  // Claimed now, before its proxy starts: a process sharing the DATA_DIR that starts meanwhile sees the claim.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, OWNER_FILE), `${process.pid} ${startTimeOf(process.pid)} ${ports.join(',')}\n`, { mode: 0o600 });
  return { dir, strays };
}

/** `edge/<proxy>` and `edge/<proxy>-<port>`: real directories only (the platform makes them; a link is not followed). */
function proxyDirectories(dataDir: string, proxy: ProxyName): string[] {
  const edge = join(dataDir, 'edge');
  let names: string[];
  try {
    names = readdirSync(edge);
  } catch {
    return [];
  }
  const pattern = new RegExp(`^${proxy}(-\\d+)?$`);
  return names.filter((name) => pattern.test(name) && lstatSync(join(edge, name)).isDirectory()).map((name) => join(edge, name));
}

/** The live process recorded as driving the proxy of `dir` (same pid and start time) or null, and its router ports. */
function ownerOf(dir: string): { live: number | null; ports: number[] } {
  const [pid, started, ports] = readPlainFile(join(dir, OWNER_FILE)).trim().split(' ');
  const recorded = (ports ?? '')
    .split(',')
    .map(Number)
    .filter((port) => Number.isInteger(port) && port > 0);
  const live = Number(pid) > 1 && Number(started) > 0 && startTimeOf(Number(pid)) === Number(started);
  return { live: live ? Number(pid) : null, ports: recorded };
}

/** The ports of the `bind` (HAProxy) and `listen` (nginx) lines of a configuration the driver wrote. */
function portsListenedOn(configPath: string): number[] {
  return [...readPlainFile(configPath).matchAll(/^\s*(?:bind|listen)\s+(?:\S*:)?(\d+)(?:\s|;|$)/gm)].map((m) => Number(m[1]));
}

/**
 * Whether the running proxy of `dir` (its configuration as last loaded) listens on `port`. An adopted proxy that does
 * not was started for another ROUTER_PORT: its driver reloads it at once, rather than at the table's first change.
 */
export function runningConfigListensOn(configPath: string, port: number): boolean {
  return portsListenedOn(configPath).includes(port);
}

/** A file the platform wrote in a directory only it enters, or '' (missing, or not a regular file: never followed). */
function readPlainFile(path: string): string {
  try {
    return lstatSync(path).isFile() ? readFileSync(path, 'utf8') : '';
  } catch {
    return '';
  }
}

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or 0: a reused pid has another. */
function startTimeOf(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) || 0;
}
