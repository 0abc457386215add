import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { workerMark } from '../jobs/orphan-processes.js';
import { BoundedCapture, ByteTail, LineSplitter, LineTail, OutputTooLarge } from '../logs/bounded-lines.js';

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The whole standard output without `onLine`; with it, only its last lines (see `LineTail`). */
  stdout: string;
  /** The last lines of standard error (at most 64 KiB; each line at most 16 KiB). */
  stderr: string;
}

/** Default most standard output kept whole for a command run without `onLine`. */
export const MAX_CAPTURED_STDOUT_BYTES = 8 * 1024 * 1024;

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * Each output line as it arrives (both streams; a line longer than 16 KiB arrives cut, with a
   * marker), for streaming logs. Returning `false` says no more lines are wanted (e.g. the log
   * is full): the rest is read and dropped without being split.
   */
  onLine?: (line: string) => void | boolean;
  /**
   * Without `onLine`: most bytes of standard output kept whole (default 8 MiB). Past it the
   * command is killed and `run` rejects with `OutputTooLarge`: a caller that parses the output
   * never sees a part of it.
   */
  maxStdoutBytes?: number;
  /**
   * The child's standard output as a stream for the caller to consume (with backpressure: the
   * child blocks while it is not read), instead of being captured; `stdout` is then empty.
   */
  takeStdout?: (stdout: Readable) => void;
  /** Fed to the child's standard input (closed at its end); an error in it kills the child. */
  stdin?: Readable;
  /** Pipes on fds 3, 4, … of the child (e.g. bubblewrap's --userns-block-fd and --info-fd). */
  extraPipes?: number;
  /** Called once the child is spawned, with its extra pipes at `child.stdio[3…]`. */
  onSpawn?: (child: ChildProcess) => void;
}

/**
 * Runs a program without a shell (arguments are never interpreted), collecting its output
 * through bounded buffers: however much it prints, the memory held stays small (the whole
 * stdout only when asked for, up to a limit; otherwise the last lines).
 * Abort or timeout kills the whole process group, so children of `sh -c` die too.
 */
export function run(file: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      // The worker's mark lets a later worker find and end this group if this process dies (kill -9).
      env: { ...(options.env ?? process.env), ...workerMark() },
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe', ...Array<'pipe'>(options.extraPipes ?? 0).fill('pipe')],
      detached: true,
    });
    options.onSpawn?.(child);
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    // Each stream is split into lines while someone wants them; otherwise only its last bytes are kept, unsplit.
    let wantsLines = options.onLine !== undefined;
    const streamOf = () => {
      const tail = new LineTail();
      const raw = new ByteTail();
      const splitter = new LineSplitter((line) => {
        tail.push(line);
        if (wantsLines && options.onLine!(line) === false) wantsLines = false;
      });
      return {
        write: (c: Buffer) => (wantsLines ? splitter.write(c) : raw.write(c)),
        text: () => {
          splitter.end();
          if (raw.empty) return tail.text();
          const recent = new LineTail();
          raw.linesInto(recent);
          return recent.text();
        },
      };
    };
    const stdoutLines = streamOf();
    const stderrLines = streamOf();
    if (options.stdin) {
      // A child that stops reading (it ended) must not crash the platform with EPIPE.
      child.stdin!.on('error', () => {});
      options.stdin.on('error', kill);
      options.stdin.pipe(child.stdin!);
    }
    const whole = options.onLine || options.takeStdout ? null : new BoundedCapture(options.maxStdoutBytes ?? MAX_CAPTURED_STDOUT_BYTES);
    let tooLarge: OutputTooLarge | null = null;
    if (options.takeStdout) options.takeStdout(child.stdout!);
    else
      child.stdout!.on('data', (c: Buffer) => {
        if (!whole) return stdoutLines.write(c);
        if (!whole.write(c) && !tooLarge) {
          tooLarge = new OutputTooLarge(file, options.maxStdoutBytes ?? MAX_CAPTURED_STDOUT_BYTES);
          kill();
        }
      });
    child.stderr!.on('data', (c: Buffer) => stderrLines.write(c));
    const timer = options.timeoutMs ? setTimeout(kill, options.timeoutMs) : null;
    options.signal?.addEventListener('abort', kill, { once: true });
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', kill);
      if (tooLarge) return reject(tooLarge);
      resolve({ code, signal, stdout: whole ? whole.text() : options.takeStdout ? '' : stdoutLines.text(), stderr: stderrLines.text() });
    });
  });
}
