import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

/** What a sandbox's own network namespace is connected to. */
export interface SandboxNetwork {
  /** Connections out (the internet) through pasta's sockets; off: only its own loopback. */
  outbound: boolean;
  /** A web instance: the host's loopback `hostPort` reaches `port` on the sandbox's loopback. */
  forward?: { hostPort: number; port: number };
  /**
   * Ports of the host's loopback the sandbox reaches at the same port on its own loopback. Only for
   * a platform command that runs no member code (buildah pushing to a registry on this machine).
   */
  hostLoopbackPorts?: number[];
}

/** The address forwards listen on: the edge and the health checks dial it, nothing else can. */
export const FORWARD_HOST = '127.0.0.1';

/** pasta usually attaches within 100 ms; past this the sandbox is ended instead of run without its network. */
const READY_TIMEOUT_MS = 5000;
const POLL_MS = 3;
const STDERR_TAIL_BYTES = 2048;

/** A running pasta: `exited` resolves with why it ended (it must not end before the sandbox). */
export interface NetworkHelper {
  exited: Promise<string>;
  stop(): void;
}

/**
 * Starts pasta (Debian package passt) on the sandbox's network namespace, created by bubblewrap
 * inside the sandbox's user namespace. pasta runs as the sandbox user (it must, to enter a
 * namespace that user owns; it is never root afterwards), copies the host's address and routes
 * into the namespace so connections out leave through its own sockets, and does not map the
 * gateway to the host (--no-map-gw): the host's loopback stays unreachable. The only way in is
 * the forward from the host's loopback to the instance's port (pasta's splice to the
 * namespace's loopback). Resolves once the namespace is configured.
 */
export async function attachNetwork(childPid: number, uid: number, network: SandboxNetwork): Promise<NetworkHelper | null> {
  const toHost = network.hostLoopbackPorts ?? [];
  if (!network.outbound && !network.forward && toHost.length === 0) return null;
  const args = [
    '--foreground',
    '--quiet',
    '--runas',
    `${uid}:${uid}`,
    ...(network.outbound ? ['--config-net', '--no-map-gw'] : []),
    '--tcp-ports',
    network.forward ? `${FORWARD_HOST}/${network.forward.hostPort}:${network.forward.port}` : 'none',
    '--udp-ports',
    'none',
    // Nothing of the host's loopback is forwarded into the namespace (but a platform command's registry).
    '--tcp-ns',
    toHost.length > 0 ? toHost.join(',') : 'none',
    '--udp-ns',
    'none',
    '--userns',
    `/proc/${childPid}/ns/user`,
    '--netns',
    `/proc/${childPid}/ns/net`,
  ];
  const pasta = spawn('pasta', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  pasta.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL_BYTES);
  });
  const exited = new Promise<string>((resolve) => {
    pasta.on('error', (err) => resolve(`pasta could not start: ${err.message}`));
    pasta.on('close', (code, signal) => resolve(describeExit(code, signal, stderr)));
  });
  let gone: string | null = null;
  void exited.then((why) => (gone = why));
  const stop = () => stopHelper(pasta);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await configured(childPid, network))) {
    if (gone !== null) throw new Error(`the sandbox's network could not be set up: ${gone}`);
    if (Date.now() > deadline) {
      stop();
      throw new Error(`the sandbox's network could not be set up: pasta was not ready within ${READY_TIMEOUT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return { exited, stop };
}

function stopHelper(pasta: ChildProcess): void {
  if (pasta.exitCode === null && pasta.signalCode === null) pasta.kill('SIGKILL');
}

function describeExit(code: number | null, signal: NodeJS.Signals | null, stderr: string): string {
  const detail = stderr
    .split('\n')
    .filter((l) => l.trim() && !l.includes('syslog'))
    .pop();
  return `pasta ended (${signal ? `signal ${signal}` : `exit code ${code}`})${detail ? `: ${detail.trim()}` : ''}`;
}

/** The namespace has its default route (when outbound) and the host listens on the forward's port. */
async function configured(childPid: number, network: SandboxNetwork): Promise<boolean> {
  if (network.outbound && !(await hasDefaultRoute(childPid))) return false;
  if (network.forward && !(await hostListens(network.forward.hostPort))) return false;
  for (const port of network.hostLoopbackPorts ?? []) if (!(await listensOn(`/proc/${childPid}/net/tcp`, port))) return false;
  return true;
}

async function hasDefaultRoute(pid: number): Promise<boolean> {
  const v4 = await readFile(`/proc/${pid}/net/route`, 'utf8').catch(() => '');
  if (v4.split('\n').some((line) => line.split('\t')[1] === '00000000')) return true;
  const v6 = await readFile(`/proc/${pid}/net/ipv6_route`, 'utf8').catch(() => '');
  return v6.split('\n').some((line) => line.startsWith(`${'0'.repeat(32)} 00 `) && !line.trimEnd().endsWith(' lo'));
}

/** Something listens on the host's 127.0.0.1:<port>. */
export function hostListens(port: number): Promise<boolean> {
  return listensOn('/proc/net/tcp', port);
}

async function listensOn(tcpTable: string, port: number): Promise<boolean> {
  const table = await readFile(tcpTable, 'utf8').catch(() => '');
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return table.split('\n').some((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1] === local && fields[3] === '0A';
  });
}

/** Resolves once bubblewrap has brought up the namespace's loopback (pasta must come after it). */
export async function loopbackUp(pid: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const [v6, v4] = await Promise.all([
      readFile(`/proc/${pid}/net/if_inet6`, 'utf8').catch(() => null),
      readFile(`/proc/${pid}/net/fib_trie`, 'utf8').catch(() => null),
    ]);
    if (v6 === null && v4 === null) throw new Error('the sandbox ended while its network was set up');
    // ::1 shows once lo is up; without IPv6, 127.0.0.1's local route does.
    if (v6?.split('\n').some((line) => line.trim().endsWith(' lo'))) return;
    if (v6 === null && v4?.includes('127.0.0.1')) return;
    if (Date.now() > deadline) throw new Error("the sandbox's loopback did not come up");
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Ends pasta processes whose sandbox is gone: this pasta (Debian bookworm's) does not quit when
 * the namespace it serves ends, and the platform stops its own only while it runs (a platform
 * killed with SIGKILL leaves them, each holding a host port). Only a pasta running as a sandbox
 * user (`uids`) whose `--netns /proc/<pid>/ns/net` names a process that no longer exists (or is a zombie) is ended.
 */
export async function endOrphanedHelpers(uids: { first: number; last: number }): Promise<number> {
  let ended = 0;
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!argv[0]?.endsWith('pasta')) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
    if (uid < uids.first || uid > uids.last) continue;
    const target = argv.map((arg) => /^\/proc\/(\d+)\/ns\/net$/.exec(arg)?.[1]).find(Boolean);
    // A zombie (killed, not yet reaped by whoever inherited it) no longer needs its network.
    const targetStatus = target ? await readFile(`/proc/${target}/status`, 'utf8').catch(() => null) : null;
    if (!target || (targetStatus !== null && !/^State:\s+Z/m.test(targetStatus))) continue;
    try {
      process.kill(Number(entry), 'SIGKILL');
      ended++;
    } catch {
      /* gone meanwhile */
    }
  }
  return ended;
}

/**
 * Ends the pasta that forwards host port `hostPort` (a previous platform process's, for an
 * instance this process adopted and that has ended): its sandbox's process may linger as a
 * zombie, which `endOrphanedHelpers` takes for alive, and a restart needs the port now.
 * Only a pasta running as a sandbox user (`uids`) with exactly that forward is ended.
 */
export async function endHelperForwarding(uids: { first: number; last: number }, hostPort: number): Promise<number> {
  const forward = `${FORWARD_HOST}/${hostPort}:`;
  let ended = 0;
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!argv[0]?.endsWith('pasta')) continue;
    const ports = argv[argv.indexOf('--tcp-ports') + 1];
    if (!argv.includes('--tcp-ports') || !ports?.startsWith(forward)) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
    if (uid < uids.first || uid > uids.last) continue;
    try {
      process.kill(Number(entry), 'SIGKILL');
      ended++;
    } catch {
      /* gone meanwhile */
    }
  }
  return ended;
}
