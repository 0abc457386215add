import { open, readdir, readFile, readlink } from 'node:fs/promises';

/** What a look at an instance's listening sockets found: the ports, or null with why not. */
export interface ListeningReport {
  ports: number[] | null;
  checked: string;
}

/** Most processes of one instance looked at (a fork bomb must not make a failure report slow). */
const MAX_PROCESSES = 64;
/** Most open files looked at per process, and bytes of a socket table read (about 25,000 sockets). */
const MAX_FDS = 4096;
const MAX_TABLE_BYTES = 4 * 1024 * 1024;
const LISTEN = '0A';

/**
 * The TCP ports the given processes listen on: the LISTEN sockets of /proc/<pid>/net/tcp{,6}
 * (the table of the process's own network namespace) whose inode one of the processes holds
 * open (/proc/<pid>/fd). Only sockets the instance owns count, so a namespace shared with the
 * host (no sandbox) or a helper listening inside it never shows as the app's.
 */
export async function listeningPorts(pids: number[]): Promise<number[]> {
  const inodes = new Set<string>();
  const tables = new Map<string, string>();
  for (const pid of pids.slice(0, MAX_PROCESSES)) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds.slice(0, MAX_FDS)) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) inodes.add(m[1]!);
    }
    // One read of the tables per network namespace.
    const namespace = await readlink(`/proc/${pid}/ns/net`).catch(() => `pid ${pid}`);
    if (tables.has(namespace)) continue;
    const text = (await Promise.all(['tcp', 'tcp6'].map((t) => readBounded(`/proc/${pid}/net/${t}`)))).join('\n');
    tables.set(namespace, text);
  }
  const ports = new Set<number>();
  for (const text of tables.values()) {
    for (const line of text.split('\n')) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (fields.length < 10 || fields[3] !== LISTEN || !inodes.has(fields[9]!)) continue;
      const port = parseInt(fields[1]!.split(':')[1] ?? '', 16);
      if (Number.isInteger(port)) ports.add(port);
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** At most MAX_TABLE_BYTES of a /proc file (a tenant with many sockets makes its table long). */
async function readBounded(path: string): Promise<string> {
  const file = await open(path, 'r').catch(() => null);
  if (!file) return '';
  try {
    const buffer = Buffer.alloc(64 * 1024);
    let text = '';
    while (text.length < MAX_TABLE_BYTES) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      text += buffer.toString('latin1', 0, bytesRead);
    }
    return text;
  } catch {
    return '';
  } finally {
    await file.close();
  }
}

/** The pids of a control group (its `cgroup.procs`), or null when it cannot be read. */
export async function cgroupProcesses(procsFile: string): Promise<number[] | null> {
  try {
    return (await readFile(procsFile, 'utf8'))
      .split('\n')
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
  } catch {
    return null;
  }
}

/** The pids of a process group (an unsandboxed instance is `sh -c cmd` and what it forks). */
export async function groupProcesses(leader: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(rest[2]) === leader) pids.push(Number(entry));
  }
  return pids;
}
