import type { CommandResult } from '../git/command.js';
import type { PreparedSandbox } from '../sandbox/index.js';
import { BuildError } from './port.js';

/**
 * A build command that failed after the kernel's OOM killer struck its control group fails the
 * build with that reason (and the limit), rather than an unexplained signal or exit code.
 */
export async function failIfOutOfMemory(sandbox: PreparedSandbox, result: CommandResult): Promise<void> {
  if (result.code === 0 || (await sandbox.cgroup.oomKills()) === 0) return;
  const limit = sandbox.limits.memoryBytes;
  throw new BuildError(
    limit
      ? `OOM: the build exceeded its memory limit of ${Math.round(limit / (1024 * 1024))} MiB (the operator's BUILD_MEMORY_MB)`
      : 'OOM: the build was killed for lack of memory',
  );
}
