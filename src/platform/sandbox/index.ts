import type { Config } from '../../config.js';
import type { Db } from '../db/database.js';
import { Sandbox } from './sandbox.js';
import { DatabaseUids, parseUidRange } from './uid-allocator.js';

export { Sandbox, SandboxUnavailable, type PreparedSandbox, type SandboxRequest, type UidSource } from './sandbox.js';
export type { SandboxView } from './bwrap.js';
export { runSandboxed } from './user-map.js';
export { CgroupHierarchy, type Cgroup, type CgroupSettings } from './cgroups.js';

/** The sandbox of builds and application processes, or null with RUNTIME_ISOLATION=none. */
export function createSandbox(config: Config, db: Db, options: { forBuilds?: boolean } = {}): Sandbox | null {
  if (config.RUNTIME_ISOLATION === 'none') return null;
  return new Sandbox({
    uids: new DatabaseUids(db, parseUidRange(config.SANDBOX_UID_RANGE)),
    pidsMax: config.SANDBOX_PIDS_MAX,
    cgroups: { root: config.CGROUP_ROOT, version: config.CGROUP_VERSION },
    // A build names no pod class: without these one build (or its /tmp, a tmpfs) could take the host's memory.
    ...(options.forBuilds
      ? {
          defaultLimits: {
            memoryBytes: config.BUILD_MEMORY_MB * 1024 * 1024,
            ...(config.BUILD_CPU_MILLICORES > 0 ? { cpuMillicores: config.BUILD_CPU_MILLICORES } : {}),
          },
        }
      : {}),
    // Covered inside every sandbox when they lie below a system directory it binds (/opt, /usr, /etc).
    hiddenPaths: [config.dataDir, ...(config.BUILDAH_STORAGE_ROOT ? [config.BUILDAH_STORAGE_ROOT] : []), process.cwd()],
  });
}

export const NO_ISOLATION_WARNING =
  "RUNTIME_ISOLATION=none: builds and applications run as root with the platform's view of this machine; " +
  'any member who deploys can read its secrets. Use only when every member is trusted (a single team).';
