import { spawn, type ChildProcess } from 'node:child_process';
import { workerMark } from '../jobs/orphan-processes.js';

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Each output line as it arrives (both streams), for streaming logs. */
  onLine?: (line: string) => void;
  /** Pipes on fds 3, 4, … of the child (e.g. bubblewrap's --userns-block-fd and --info-fd). */
  extraPipes?: number;
  /** Called once the child is spawned, with its extra pipes at `child.stdio[3…]`. */
  onSpawn?: (child: ChildProcess) => void;
}

/**
 * Runs a program without a shell (arguments are never interpreted), collecting its output.
 * Abort or timeout kills the whole process group, so children of `sh -c` die too.
 */
export function run(file: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      // The worker's mark lets a later worker find and end this group if this process dies (kill -9).
      env: { ...(options.env ?? process.env), ...workerMark() },
      stdio: ['ignore', 'pipe', 'pipe', ...Array<'pipe'>(options.extraPipes ?? 0).fill('pipe')],
      detached: true,
    });
    options.onSpawn?.(child);
    let stdout = '';
    let stderr = '';
    const partial = { out: '', err: '' };
    const feed = (key: 'out' | 'err', chunk: Buffer) => {
      const text = chunk.toString();
      if (key === 'out') stdout += text;
      else stderr += text;
      if (!options.onLine) return;
      partial[key] += text;
      let nl: number;
      while ((nl = partial[key].indexOf('\n')) >= 0) {
        options.onLine(partial[key].slice(0, nl).replace(/\r$/, ''));
        partial[key] = partial[key].slice(nl + 1);
      }
    };
    child.stdout!.on('data', (c: Buffer) => feed('out', c));
    child.stderr!.on('data', (c: Buffer) => feed('err', c));
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = options.timeoutMs ? setTimeout(kill, options.timeoutMs) : null;
    options.signal?.addEventListener('abort', kill, { once: true });
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', kill);
      if (options.onLine) {
        if (partial.out) options.onLine(partial.out);
        if (partial.err) options.onLine(partial.err);
      }
      resolve({ code, signal, stdout, stderr });
    });
  });
}
