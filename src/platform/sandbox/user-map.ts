import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { run, type CommandResult, type RunOptions } from '../git/command.js';
import { attachNetwork, loopbackUp, type NetworkHelper } from './network.js';
import type { PreparedSandbox } from './sandbox.js';

/** Pipes on fds 3, 4, 5 of a sandbox's launcher: bubblewrap's --userns-block-fd, --info-fd and --block-fd. */
export const CONTROL_PIPES = 3;

/** A started sandbox under the platform's control (see `controlSandbox`). */
export interface SandboxControl {
  /** Resolves once the command runs with its user map and network; rejects (the sandbox killed) otherwise. */
  ready: Promise<void>;
  /** Resolves if the sandbox's network helper ends while the sandbox still runs (the sandbox is then unreachable). */
  networkLost: Promise<string>;
  /** Ends the network helper (call when the sandbox has ended). */
  release(): void;
}

/** Runs a prepared sandbox to its end (its network helper ends with it). */
export async function runSandboxed(sandbox: PreparedSandbox, options: Omit<RunOptions, 'extraPipes' | 'onSpawn'>): Promise<CommandResult> {
  let control: SandboxControl | null = null;
  try {
    return await run(sandbox.file, sandbox.args, {
      ...options,
      extraPipes: CONTROL_PIPES,
      onSpawn: (child) => {
        control = controlSandbox(child, sandbox);
        control.ready.catch(() => {});
        // Without its network a build step would fail in confusing ways: end it.
        void control.networkLost.then(() => killGroup(child));
      },
    });
  } finally {
    (control as SandboxControl | null)?.release();
  }
}

/**
 * Lets a sandbox started from `sandbox.file/args` (with CONTROL_PIPES extra pipes) run: bubblewrap
 * waits (--userns-block-fd) while we, as root outside, map the sandbox user to its user inside its
 * new user namespace (written by root, the map leaves `setgroups` allowed there, which buildah
 * needs in a mapped-root build); then, its loopback up, pasta gives its network namespace a way
 * out (and the forward in); then the command starts (--block-fd). Any failure ends the sandbox
 * before its command runs: it never runs unmapped or without the network it was given.
 */
export function controlSandbox(child: ChildProcess, sandbox: PreparedSandbox): SandboxControl {
  const pipes = child.stdio as unknown as Array<NodeJS.ReadableStream & NodeJS.WritableStream>;
  const [unblockUserNamespace, info, unblockCommand] = [pipes[3]!, pipes[4]!, pipes[5]!];
  // A write to a sandbox that died first must not crash the platform.
  for (const pipe of [unblockUserNamespace, unblockCommand])
    (pipe as NodeJS.WritableStream & { on(e: 'error', f: () => void): void }).on('error', () => {});
  let helper: NetworkHelper | null = null;
  let released = false;
  let lost: (why: string) => void = () => {};
  const networkLost = new Promise<string>((resolve) => (lost = resolve));
  const ready = childPid(info).then(async (pid) => {
    await writeFile(`/proc/${pid}/uid_map`, `${sandbox.innerUid} ${sandbox.uid} 1\n`);
    await writeFile(`/proc/${pid}/gid_map`, `${sandbox.innerGid} ${sandbox.uid} 1\n`);
    unblockUserNamespace.end('x');
    await loopbackUp(pid);
    helper = await attachNetwork(pid, sandbox.uid, sandbox.network);
    if (released) helper?.stop();
    void helper?.exited.then((why) => {
      if (!released) lost(why);
    });
    unblockCommand.end('x');
  });
  ready.catch(() => killGroup(child));
  return {
    ready,
    networkLost,
    release: () => {
      released = true;
      (helper as NetworkHelper | null)?.stop();
    },
  };
}

function childPid(info: NodeJS.ReadableStream): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    info.on('data', (chunk: Buffer) => {
      text = (text + chunk.toString()).slice(0, 4096);
      const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
      if (pid) resolve(Number(pid));
    });
    info.on('error', () => reject(new Error('the sandbox ended before it started')));
    info.on('end', () => reject(new Error('the sandbox ended before it started')));
  });
}

/** Ends the sandbox's whole process group (its result then says it was killed). */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
}
