import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

export interface RunningServer {
  url: string;
  pid: number;
  /** Resident memory of the server process (VmRSS from /proc), in bytes. */
  rss(): number;
  stop(): Promise<void>;
}

/** Spawns `node --import tsx <script>` (or `node <script>` for compiled JavaScript) and waits until its output names its URL. */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  listening: RegExp,
  nodeFlags: string[] = [],
): Promise<RunningServer> {
  const args = [...nodeFlags, ...(script.endsWith('.js') ? [script] : ['--import', 'tsx', script])];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${script} did not start in 60 s:\n${output.slice(-2000)}`)), 60_000);
    const onData = (d: Buffer) => {
      // Logs during load are discarded: only the start-up output is kept for errors.
      if (output.length < 100_000) output += d;
      const m = listening.exec(output);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${script} exited with ${code}:\n${output.slice(-2000)}`));
    });
  });
  return {
    url,
    pid: child.pid!,
    rss: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null) return done();
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(killer);
          done();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** CPU seconds (user + system) used so far by `pid`, and by its descendants (e.g. the embedded PostgreSQL). */
export function cpuSeconds(pid: number): { self: number; descendants: number } {
  const ticks = 100; // USER_HZ on Linux
  const children = new Map<number, number[]>();
  const used = new Map<number, number>();
  const exited = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      // Fields after the parenthesised command name: state ppid ... utime(14) stime(15) cutime(16) cstime(17).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      used.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / ticks);
      // cutime + cstime: what its exited children used (PostgreSQL backends that closed meanwhile).
      exited.set(Number(entry), (Number(fields[13]) + Number(fields[14])) / ticks);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* the process ended meanwhile */
    }
  }
  let descendants = 0;
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length) {
    const next = stack.pop()!;
    descendants += (used.get(next) ?? 0) + (exited.get(next) ?? 0);
    stack.push(...(children.get(next) ?? []));
  }
  return { self: used.get(pid) ?? 0, descendants };
}
