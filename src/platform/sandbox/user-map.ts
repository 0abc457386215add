import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { run, type CommandResult, type RunOptions } from '../git/command.js';
import type { PreparedSandbox } from './sandbox.js';

/**
 * Runs a prepared sandbox to its end. A `mappedRoot` sandbox waits (bubblewrap's
 * --userns-block-fd) until we, as root outside, have mapped the sandbox user to root inside
 * its new user namespace: written by root, the map leaves `setgroups` allowed there (buildah
 * sets a build step's groups), which an unprivileged bubblewrap cannot do for itself.
 */
export function runSandboxed(sandbox: PreparedSandbox, options: Omit<RunOptions, 'extraPipes' | 'onSpawn'>): Promise<CommandResult> {
  if (!sandbox.mappedRoot) return run(sandbox.file, sandbox.args, options);
  return run(sandbox.file, sandbox.args, { ...options, extraPipes: 2, onSpawn: (child) => mapWhenAsked(child, sandbox.uid) });
}

function mapWhenAsked(child: ChildProcess, uid: number): void {
  const unblock = child.stdio[3] as NodeJS.WritableStream;
  const info = child.stdio[4] as NodeJS.ReadableStream;
  let text = '';
  let mapped = false;
  info.on('data', (chunk: Buffer) => {
    // bubblewrap's info is a few hundred bytes; nothing more is ever needed from it.
    if (text.length < 64 * 1024) text += chunk.toString();
    const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
    if (!pid || mapped) return;
    mapped = true;
    writeFile(`/proc/${pid}/uid_map`, `0 ${uid} 1\n`)
      .then(() => writeFile(`/proc/${pid}/gid_map`, `0 ${uid} 1\n`))
      .then(
        () => unblock.end('x'),
        () => {
          // Never let it run unmapped: end the whole group (its result says it was killed).
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            /* already gone */
          }
        },
      );
  });
  // A write to a sandbox that died first must not crash the platform.
  (unblock as NodeJS.WritableStream & { on(e: 'error', f: () => void): void }).on('error', () => {});
}
