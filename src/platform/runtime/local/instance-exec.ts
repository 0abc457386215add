import { spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Transform } from 'node:stream';
import type { PreparedSandbox } from '../../sandbox/index.js';
import type { ExecProcess, ExecRequest } from '../port.js';
import { StreamScrubber } from '../stream-scrubber.js';
import { EXEC_HELPER, helperSyscalls, JOINED_NAMESPACES } from './exec-helper.js';
import { killGroup } from './process-group.js';
import { processStartTicks } from './shim-client.js';

/** What the driver knows of the running instance a command enters. */
export interface ExecTarget {
  /** The instance's process (its group leader: bubblewrap's outer process when sandboxed) and its start time. */
  pid: number;
  startTicks: string | null;
  sandbox: PreparedSandbox | null;
  /** Where its command runs: the artifact directory, or its image's working directory. */
  cwd: string;
  env: Record<string, string>;
  secrets: string[];
}

/** Raised when the instance cannot be entered (it ended, or is not the process on record): the API's 409. */
export class ExecRefused extends Error {}

/** The command line run inside: the caller's words through `sh -c`, or a login-less interactive shell. */
function commandLine(request: ExecRequest): string[] {
  if (request.command) return ['/bin/sh', '-c', request.command];
  return ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi'];
}

/**
 * Enters a running instance: its control group (counted against its limits), its user, mount,
 * PID, network, IPC, UTS and cgroup namespaces, as its user inside, with no capabilities and no
 * new privileges, in its working directory and environment (see exec-helper.ts). The namespaces
 * are those of bubblewrap's child of the recorded process, opened only after the process was
 * proven to be the instance's (its start time) and checked again once open: a reused pid never
 * leads anywhere. Nothing of the tenant's file system is followed outside the sandbox.
 */
export async function execInInstance(target: ExecTarget, request: ExecRequest): Promise<ExecProcess> {
  const syscalls = helperSyscalls();
  if (target.sandbox && !syscalls) throw new ExecRefused(`exec into sandboxed instances is not supported on ${process.arch}`);
  const nsFds = target.sandbox ? await openNamespaces(target) : [];
  const tty = request.tty;
  let child;
  try {
    child = spawn(
      'perl',
      [
        '-e',
        EXEC_HELPER,
        syscalls ?? '',
        (target.sandbox?.cgroup.procsFiles ?? []).join('\n'),
        target.sandbox ? '1' : '',
        String(target.sandbox?.innerUid ?? process.getuid?.() ?? 0),
        String(target.sandbox?.innerGid ?? process.getgid?.() ?? 0),
        target.cwd,
        tty ? `${tty.rows}x${tty.cols}` : '',
        ...commandLine(request),
      ],
      {
        env: { ...target.env, ...(tty ? { TERM: tty.term } : {}) },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', tty ? 'pipe' : 'ignore', ...nsFds],
      },
    );
  } finally {
    for (const fd of nsFds) closeSync(fd);
  }
  const stderr = child.stderr!.pipe(scrubbed(target.secrets));
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      // The caller reads why on the command's stderr (perl is part of every Debian system: perl-base).
      if (!stderr.writableEnded) stderr.write(`slipway exec: cannot start the exec helper (perl): ${err.code ?? err.message}\n`);
      resolve({ exitCode: 127, signal: null });
    });
    child.once('close', (code, signal) => resolve({ exitCode: code, signal }));
  });
  child.stdin!.on('error', () => {});
  const control = tty ? (child.stdio[3] as NodeJS.WritableStream & { on(e: 'error', f: () => void): void }) : null;
  control?.on('error', () => {});
  return {
    stdin: child.stdin!,
    stdout: child.stdout!.pipe(scrubbed(target.secrets)),
    stderr,
    resize: (size) => {
      if (control && tty) control.write(`${clampSize(size.rows)} ${clampSize(size.cols)}\n`);
    },
    kill: () => killGroup(child.pid, 'SIGKILL'),
    exited,
  };
}

const clampSize = (n: number) => Math.max(1, Math.min(9999, Math.floor(n)));

/** A pass-through that holds back and masks the instance's secret values (the stream's end flushes the rest). */
function scrubbed(secrets: string[]): Transform {
  const holder: { scrubber?: StreamScrubber } = {};
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      holder.scrubber!.write(chunk);
      done();
    },
    flush(done) {
      holder.scrubber!.end();
      done();
    },
  });
  holder.scrubber = new StreamScrubber(secrets, (bytes) => transform.push(bytes));
  return transform;
}

/**
 * The sandbox's namespaces, as open files: those of bubblewrap's only child of the instance's
 * process (the sandbox's PID 1), which holds exactly what bubblewrap made, whatever the tenant's
 * processes did to their own. Refused unless the process is still the one on record and the
 * child still its child once the files are open.
 */
async function openNamespaces(target: ExecTarget): Promise<number[]> {
  const gone = () => new ExecRefused('the instance is not running (it may be restarting): try again in a moment');
  if (!target.startTicks || (await processStartTicks(target.pid)) !== target.startTicks) throw gone();
  const children = (await readFile(`/proc/${target.pid}/task/${target.pid}/children`, 'utf8').catch(() => '')).trim().split(/\s+/);
  const init = Number(children[0]);
  if (children.length !== 1 || !Number.isInteger(init) || init <= 0) throw gone();
  if ((await parentOf(init)) !== target.pid) throw gone();
  const fds: number[] = [];
  try {
    for (const ns of JOINED_NAMESPACES) fds.push(openSync(`/proc/${init}/ns/${ns}`, 'r'));
    const stillOurs = (await parentOf(init)) === target.pid && (await processStartTicks(target.pid)) === target.startTicks;
    // A sandbox always has a user namespace of its own: the host's would mean this is not one.
    const ownUser = fstatSync(fds[0]!).ino !== statSync('/proc/self/ns/user').ino;
    if (!stillOurs || !ownUser) throw gone();
    return fds;
  } catch (err) {
    for (const fd of fds) closeSync(fd);
    throw err instanceof ExecRefused ? err : gone();
  }
}

async function parentOf(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (!stat) return null;
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}
