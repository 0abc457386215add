import { createConnection } from 'node:net';

/** The most a runtime API answer may hold (`show stat` of every route's backend fits with room to spare). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
const COMMAND_TIMEOUT_MS = 10_000;

/**
 * One command on HAProxy's master CLI (a unix socket 0600 in the platform's 0700 directory):
 * the connection carries one command line (commands for a worker are prefixed `@1`, the
 * current worker, so they never reach a worker that is finishing after a reload) and HAProxy
 * closes it after answering. The answer is bounded: past `MAX_ANSWER_BYTES` the command fails. While
 * the master re-executes itself (a reload) its socket refuses connections: the command is sent again.
 */
export async function haproxyCommand(socketPath: string, command: string): Promise<string> {
  if (/[\r\n]/.test(command)) throw new Error('a HAProxy command is one line');
  const deadline = Date.now() + COMMAND_TIMEOUT_MS;
  for (;;) {
    try {
      return await once(socketPath, command);
    } catch (err) {
      // The master re-executes itself on a reload: its socket refuses connections for that moment.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ECONNREFUSED' && code !== 'ENOENT') || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

function once(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const socket = createConnection(socketPath);
    socket.setTimeout(COMMAND_TIMEOUT_MS, () => socket.destroy(new Error(`HAProxy did not answer "${command.slice(0, 60)}"`)));
    socket.on('connect', () => socket.end(`${command}\n`));
    socket.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES)
        socket.destroy(new Error(`HAProxy's answer to "${command.slice(0, 60)}" is larger than ${MAX_ANSWER_BYTES} bytes`));
      else chunks.push(chunk);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** The rows of a `show stat` CSV answer, by column name. */
export function parseStatCsv(answer: string): Array<Record<string, string>> {
  const lines = answer.split('\n').filter((l) => l.trim() !== '');
  const header = lines.find((l) => l.startsWith('# '));
  if (!header) return [];
  const columns = header.slice(2).split(',');
  return lines
    .filter((l) => !l.startsWith('#'))
    .map((l) => {
      const values = l.split(',');
      return Object.fromEntries(columns.map((c, i) => [c, values[i] ?? '']));
    });
}

/**
 * The counters of a `show table` answer by key (`key=<k> … gpc0=<n> gpc1=<n> …`): one array of
 * `width` general purpose counters per entry. Lines that are not entries, and counters past `width`, are skipped.
 */
export function parseTableCounters(answer: string, width: number): Map<string, number[]> {
  const entries = new Map<string, number[]>();
  for (const line of answer.split('\n')) {
    const key = /^0x[0-9a-f]+: key=(\S+) /.exec(line)?.[1];
    if (key === undefined) continue;
    const counters = new Array<number>(width).fill(0);
    for (const m of line.matchAll(/ gpc(\d+)=(\d+)/g)) {
      const i = Number(m[1]);
      if (i < width) counters[i] = Number(m[2]);
    }
    entries.set(key, counters);
  }
  return entries;
}
