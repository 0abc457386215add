import { spawn, type ChildProcess } from 'node:child_process';
import type { AttachedStdio, OneOffResult, OneOffSpec } from '../port.js';
import { StreamScrubber } from '../stream-scrubber.js';
import { LineScrubber } from '../scrub.js';
import { killGroup } from './process-group.js';
import { workerMark } from '../../jobs/orphan-processes.js';
import { CONTROL_PIPES, controlSandbox, type PreparedSandbox } from '../../sandbox/index.js';

/** Output of one run passed on to its log; beyond it, lines are only counted. */
const MAX_ONE_OFF_OUTPUT_CHARS = 4 * 1024 * 1024;

/**
 * Runs a one-off process (`release`, `postdeploy`) as its own process group, its output
 * scrubbed line by line; killed on timeout or abort. `running` tracks it while it runs so
 * a shutdown can kill it.
 */
export async function runOneOff(
  spec: OneOffSpec,
  baseEnv: Record<string, string>,
  running: Set<ChildProcess>,
  sandbox: PreparedSandbox | null = null,
): Promise<OneOffResult> {
  const [file, args] = sandbox ? [sandbox.file, sandbox.args] : ['sh', ['-c', spec.command]];
  const child = spawn(file, args, {
    cwd: spec.artifactPath,
    env: { ...baseEnv, ...spec.env, ...workerMark() },
    detached: true,
    stdio: [spec.attach ? 'pipe' : 'ignore', 'pipe', 'pipe', ...Array<'pipe'>(sandbox ? CONTROL_PIPES : 0).fill('pipe')],
  });
  running.add(child);
  const control = sandbox ? controlSandbox(child, sandbox) : null;
  const attached = spec.attach ? attachStdio(child, spec.attach, spec.secrets) : null;
  // Its log keeps a few MiB at most: past this much output the rest is dropped unread, only counted.
  let kept = 0;
  let droppedBytes = 0;
  const out = new LineScrubber(spec.secrets, spec.onOutput, undefined, (line) => {
    kept += line.length + 1;
    return kept <= MAX_ONE_OFF_OUTPUT_CHARS;
  });
  const feed = (c: Buffer) => {
    if (kept <= MAX_ONE_OFF_OUTPUT_CHARS) return out.write(c);
    out.discardPartial();
    droppedBytes += c.length;
  };
  if (!attached) {
    child.stdout!.on('data', feed);
    child.stderr!.on('data', feed);
  }
  control?.ready.catch((err: Error) => out.write(`sandbox failed to start: ${err.message}\n`));
  void control?.networkLost.then((why) => {
    out.write(`the command's network ended (${why})\n`);
    killGroup(child.pid, 'SIGKILL');
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid, 'SIGKILL');
  }, spec.timeoutMs);
  const abort = () => killGroup(child.pid, 'SIGKILL');
  spec.signal?.addEventListener('abort', abort, { once: true });
  return new Promise((resolve) => {
    let ended = false;
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', abort);
      control?.release();
      out.end();
      attached?.end();
      if (kept > MAX_ONE_OFF_OUTPUT_CHARS)
        spec.onOutput(`[slipway: output past ${MAX_ONE_OFF_OUTPUT_CHARS} characters dropped (${droppedBytes} more bytes)]`);
      killGroup(child.pid, 'SIGKILL');
      running.delete(child);
      resolve({ exitCode: code, signal, timedOut });
    };
    child.on('error', (err) => {
      if (attached) attached.write('stderr', `failed to start: ${err.message}\n`);
      out.write(`failed to start: ${err.message}\n`);
      if (child.pid === undefined) end(127, null);
    });
    child.on('close', end);
  });
}

/**
 * Connects an attached caller: its input to the process's, the process's output (scrubbed, not
 * cut into lines) to it, pausing the process's output while the caller's connection is full.
 */
function attachStdio(child: ChildProcess, attach: AttachedStdio, secrets: string[]) {
  // The process may exit without reading all its input: a write after that is no error of ours.
  child.stdin!.on('error', () => undefined);
  attach.stdin.pipe(child.stdin!);
  let paused = false;
  const pause = () => {
    if (paused) return;
    paused = true;
    child.stdout!.pause();
    child.stderr!.pause();
    attach.drained(() => {
      if (!paused) return;
      paused = false;
      child.stdout!.resume();
      child.stderr!.resume();
    });
  };
  const scrubbers = {
    stdout: new StreamScrubber(secrets, (bytes) => attach.write('stdout', bytes) || pause()),
    stderr: new StreamScrubber(secrets, (bytes) => attach.write('stderr', bytes) || pause()),
  };
  child.stdout!.on('data', (c: Buffer) => scrubbers.stdout.write(c));
  child.stderr!.on('data', (c: Buffer) => scrubbers.stderr.write(c));
  return {
    write: (stream: 'stdout' | 'stderr', text: string) => attach.write(stream, Buffer.from(text)),
    end() {
      attach.stdin.unpipe(child.stdin!);
      scrubbers.stdout.end();
      scrubbers.stderr.end();
    },
  };
}
