import { spawn, type ChildProcess } from 'node:child_process';
import { open, readdir, readFile } from 'node:fs/promises';
import type { AddonKind } from '../db/schema.js';
import { killGroup } from '../runtime/local/process-group.js';
import { asSandboxUser, bwrapArguments, FORWARD_HOST } from '../sandbox/index.js';
import { serverSocket, SOCKET_ACTIVATE, SOCKET_PROXY } from './servers.js';

/** Most connections one add-on's forwarder relays at once (above every plan's own limit: the server refuses first). */
const MAX_CONNECTIONS = 1024;

/**
 * Starts what carries the host's loopback port to the add-on's server: systemd-socket-activate
 * listens on 127.0.0.1:<port> and, at the first connection, becomes systemd-socket-proxyd, which
 * relays each connection to the server's unix socket (splice, in the kernel). It replaces a pasta
 * per add-on (about 29 MiB each, its packet buffers) and leaves the server's network namespace
 * with no helper at all: nothing in it can reach out, not even the host's loopback.
 *
 * It runs as the add-on's own user in a bubblewrap sandbox that shares the host's network (it must
 * listen there) but sees of the file system only the system directories, read-only, and the
 * add-on's own directory: a link put there resolves in that view and can lead nowhere else.
 * Detached, so it outlives the platform process like the server's shim; a later process ends it
 * by its port and user (`endForwarders`).
 */
export function startForwarder(kind: AddonKind, dir: string, port: number, uid: number, hidden: string[]): ChildProcess {
  const [setpriv, ...dropPrivileges] = asSandboxUser(uid);
  const child = spawn(
    setpriv!,
    [
      ...dropPrivileges,
      'bwrap',
      ...bwrapArguments({ cwd: '/', writable: [dir], hidden }, { controlled: false, hostNetwork: true, dieWithParent: false }),
      SOCKET_ACTIVATE,
      '--listen',
      `${FORWARD_HOST}:${port}`,
      SOCKET_PROXY,
      `--connections-max=${MAX_CONNECTIONS}`,
      serverSocket(kind, dir, port),
    ],
    { cwd: '/', env: { PATH: '/usr/bin:/bin' }, stdio: 'ignore', detached: true },
  );
  child.on('error', () => {});
  child.unref();
  return child;
}

/**
 * Ends the forwarders of this port (this process's or a previous one's, also one a killed
 * platform left for a purged add-on whose port this one now has): processes of the forwarder's
 * programs, run by a sandbox user (`isSandboxUid`), listening on exactly 127.0.0.1:<port>, or by
 * the add-on's own user relaying to its socket; each one's whole process group goes (bubblewrap
 * and what it runs).
 */
export async function endForwarders(
  forwarder: { uid: number; isSandboxUid: (uid: number) => boolean },
  kind: AddonKind,
  dir: string,
  port: number,
): Promise<void> {
  const listen = `${FORWARD_HOST}:${port}`;
  const socket = serverSocket(kind, dir, port);
  const groups = new Set<number>();
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await commandLineHead(`/proc/${entry}/cmdline`)).split('\0');
    if (!argv.includes(SOCKET_PROXY) && !argv[0]?.endsWith('systemd-socket-proxyd')) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const owner = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
    const ours = (argv.includes(listen) && forwarder.isSandboxUid(owner)) || (argv.includes(socket) && owner === forwarder.uid);
    if (!ours) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    const group = stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) : 0;
    // Never this process's own group (a forwarder is always its own group's leader).
    if (group > 1 && group !== process.pid) groups.add(group);
  }
  for (const group of groups) killGroup(group, 'SIGKILL');
}

/** The first 4 KiB of a process's command line: any process may make its own arguments megabytes long. */
async function commandLineHead(path: string): Promise<string> {
  const file = await open(path, 'r').catch(() => null);
  if (!file) return '';
  try {
    const buffer = Buffer.alloc(4096);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
    return buffer.toString('utf8', 0, bytesRead);
  } catch {
    return '';
  } finally {
    await file.close();
  }
}
