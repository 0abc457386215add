import type { Config } from '../../config.js';
import type { Db } from '../db/database.js';
import { Sandbox, type SandboxOptions } from './sandbox.js';
import { DatabaseUids, parseUidRange } from './uid-allocator.js';

export { Sandbox, SandboxUnavailable, type PreparedSandbox, type SandboxRequest, type UidSource } from './sandbox.js';
export type { SandboxView } from './bwrap.js';
export { runSandboxed, controlSandbox, CONTROL_PIPES, type SandboxControl } from './user-map.js';
export { FORWARD_HOST, hostListens, type SandboxNetwork } from './network.js';
export { bwrapArguments } from './bwrap.js';
export { asSandboxUser } from './setpriv.js';
export { CgroupHierarchy, type Cgroup, type CgroupSettings } from './cgroups.js';

/** The sandbox of builds and application processes, or null with RUNTIME_ISOLATION=none. */
export function createSandbox(config: Config, db: Db, defaultLimits?: SandboxOptions['defaultLimits']): Sandbox | null {
  if (config.RUNTIME_ISOLATION === 'none') return null;
  const uidRange = parseUidRange(config.SANDBOX_UID_RANGE);
  return new Sandbox({
    uids: new DatabaseUids(db, uidRange),
    uidRange,
    pidsMax: config.SANDBOX_PIDS_MAX,
    outbound: config.SANDBOX_OUTBOUND,
    outboundOf: (applicationId) => organizationOutbound(db, applicationId),
    cgroups: { root: config.CGROUP_ROOT, version: config.CGROUP_VERSION },
    ...(defaultLimits ? { defaultLimits } : {}),
    // Covered inside every sandbox when they lie below a system directory it binds (/opt, /usr, /etc).
    hiddenPaths: [config.dataDir, ...(config.BUILDAH_STORAGE_ROOT ? [config.BUILDAH_STORAGE_ROOT] : []), process.cwd()],
  });
}

/** An organization's own outbound setting (PUT /organizations/{slug}/pipeline-limits), read where its sandbox starts. */
async function organizationOutbound(db: Db, applicationId: string): Promise<boolean | null> {
  const row = await db
    .selectFrom('applications')
    .innerJoin('projects', 'projects.id', 'applications.project_id')
    .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
    .select('organizations.sandbox_outbound')
    .where('applications.id', '=', applicationId)
    .executeTakeFirst();
  return row?.sandbox_outbound ?? null;
}

/** The sandbox of builds: every build command gets the operator's build memory and CPU limits. */
export function createBuildSandbox(config: Config, db: Db): Sandbox | null {
  return createSandbox(config, db, { memoryBytes: config.BUILD_MEMORY_MB * 1024 * 1024, cpuMillicores: config.BUILD_CPU_MILLICORES });
}

export const NO_ISOLATION_WARNING =
  "RUNTIME_ISOLATION=none: builds and applications run as root with the platform's view of this machine; " +
  'any member who deploys can read its secrets. Use only when every member is trusted (a single team).';
