import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What one sandboxed process tree may use; absent fields are not limited. */
export interface CgroupLimits {
  memoryBytes?: number;
  cpuMillicores?: number;
  pids: number;
}

/** One control group a sandboxed process tree runs in (one directory per controller on v1). */
export interface Cgroup {
  /** `cgroup.procs` files the launcher writes its pid to before it becomes the sandbox. */
  readonly procsFiles: string[];
  /** Times the kernel's OOM killer ended a process of this group. */
  oomKills(): Promise<number>;
  /** Removes the group once its processes are gone (retried: the kernel frees it lazily). */
  remove(): Promise<void>;
}

const CONTROLLERS = ['memory', 'cpu', 'pids'] as const;
const CPU_PERIOD_US = 100_000;

/**
 * The cgroup hierarchy of this machine: v2 when its unified hierarchy has the memory, cpu
 * and pids controllers; otherwise v1 with one mount per controller (hybrid hosts such as
 * this one, where the v2 mount at /sys/fs/cgroup/unified has no controllers).
 * Groups are created below the platform's own group, so they count in its limits too.
 */
export class CgroupHierarchy {
  private constructor(
    readonly version: 1 | 2,
    /** Parent directory of our groups, per controller (v2: one for all). */
    private readonly parents: Record<string, string>,
  ) {}

  /** Finds a usable hierarchy, or throws saying what is missing. */
  static async detect(root = '/sys/fs/cgroup'): Promise<CgroupHierarchy> {
    const own = ownGroups();
    for (const unified of [root, join(root, 'unified')]) {
      const controllers = readOr(join(unified, 'cgroup.controllers'))?.split(/\s+/) ?? [];
      if (!CONTROLLERS.every((c) => controllers.includes(c))) continue;
      const parent = join(unified, own.get('') ?? '/', 'slipway');
      await mkdir(parent, { recursive: true });
      // The platform's own group may hold processes ("no internal processes" rule): delegate from a child.
      await writeFile(join(parent, 'cgroup.subtree_control'), CONTROLLERS.map((c) => `+${c}`).join(' '));
      return new CgroupHierarchy(2, { '': parent });
    }
    const parents: Record<string, string> = {};
    for (const controller of CONTROLLERS) {
      const mount = join(root, controller);
      if (!existsSync(join(mount, 'cgroup.procs'))) {
        throw new Error(
          `no cgroup ${controller} controller: neither a cgroup v2 hierarchy with memory, cpu and pids nor a v1 mount at ${mount}`,
        );
      }
      const parent = join(mount, ownV1Path(own, controller), 'slipway');
      await mkdir(parent, { recursive: true });
      parents[controller] = parent;
    }
    return new CgroupHierarchy(1, parents);
  }

  /** Creates the group `name` with these limits. */
  async create(name: string, limits: CgroupLimits): Promise<Cgroup> {
    return this.version === 2 ? this.createV2(name, limits) : this.createV1(name, limits);
  }

  /** Removes the group `name` if it is left over (its processes gone), e.g. by a platform that was killed. */
  async discard(name: string): Promise<void> {
    await removeDirs(Object.values(this.parents).map((parent) => join(parent, name)));
  }

  private async createV2(name: string, limits: CgroupLimits): Promise<Cgroup> {
    const dir = join(this.parents['']!, name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'pids.max'), String(limits.pids));
    if (limits.memoryBytes) {
      await writeFile(join(dir, 'memory.max'), String(limits.memoryBytes));
      if (existsSync(join(dir, 'memory.swap.max'))) await writeFile(join(dir, 'memory.swap.max'), '0');
    }
    if (limits.cpuMillicores) await writeFile(join(dir, 'cpu.max'), `${cpuQuota(limits.cpuMillicores)} ${CPU_PERIOD_US}`);
    return {
      procsFiles: [join(dir, 'cgroup.procs')],
      oomKills: async () => counter(await readFile(join(dir, 'memory.events'), 'utf8').catch(() => ''), 'oom_kill'),
      remove: () => removeDirs([dir]),
    };
  }

  private async createV1(name: string, limits: CgroupLimits): Promise<Cgroup> {
    const dirs = Object.fromEntries(CONTROLLERS.map((c) => [c, join(this.parents[c]!, name)])) as Record<
      (typeof CONTROLLERS)[number],
      string
    >;
    for (const dir of Object.values(dirs)) await mkdir(dir, { recursive: true });
    await writeFile(join(dirs.pids, 'pids.max'), String(limits.pids));
    if (limits.memoryBytes) {
      await writeFile(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // Swap counts too where the kernel accounts it (memsw), so the limit cannot be dodged by swapping.
      const memsw = join(dirs.memory, 'memory.memsw.limit_in_bytes');
      // Refused where swap accounting is off; the memory limit above still holds.
      if (existsSync(memsw)) await writeFile(memsw, String(limits.memoryBytes)).catch(() => {});
    }
    if (limits.cpuMillicores) {
      await writeFile(join(dirs.cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(join(dirs.cpu, 'cpu.cfs_quota_us'), String(cpuQuota(limits.cpuMillicores)));
    }
    return {
      procsFiles: Object.values(dirs).map((d) => join(d, 'cgroup.procs')),
      oomKills: async () => counter(await readFile(join(dirs.memory, 'memory.oom_control'), 'utf8').catch(() => ''), 'oom_kill'),
      remove: () => removeDirs(Object.values(dirs)),
    };
  }
}

function cpuQuota(millicores: number): number {
  return Math.max(1000, Math.round((millicores / 1000) * CPU_PERIOD_US));
}

function counter(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

function readOr(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** This process's group per controller (`''` is the v2 one), from /proc/self/cgroup. */
function ownGroups(): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of (readOr('/proc/self/cgroup') ?? '').split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers === undefined || path === undefined) continue;
    for (const c of controllers.split(',')) groups.set(c, path);
  }
  return groups;
}

function ownV1Path(own: Map<string, string>, controller: string): string {
  // cpu is often co-mounted as cpu,cpuacct and listed under either name.
  return own.get(controller) ?? (controller === 'cpu' ? own.get('cpuacct') : undefined) ?? '/';
}

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || attempt === 19) return;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
}
