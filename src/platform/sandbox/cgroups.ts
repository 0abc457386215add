import { existsSync, readFileSync } from 'node:fs';
import { appendFile, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
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

/** Where to find the cgroup hierarchy (`CGROUP_ROOT`, `CGROUP_VERSION`); tests point it at a directory tree. */
export interface CgroupSettings {
  /** Mount point of the hierarchy: v2 there or at `<root>/unified`, v1 one mount per controller below it. */
  root?: string;
  /** `auto`: v2 when it offers memory, cpu and pids, else v1. `1` / `2`: only that one (fails closed otherwise). */
  version?: 'auto' | '1' | '2';
  /** Text of /proc/self/cgroup (the platform's own groups). */
  selfCgroup?: string;
}

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
  static async detect(settings: CgroupSettings = {}): Promise<CgroupHierarchy> {
    const root = settings.root ?? '/sys/fs/cgroup';
    const version = settings.version ?? 'auto';
    const own = ownGroups(settings.selfCgroup ?? readOr('/proc/self/cgroup') ?? '');
    const v2Found: string[] = [];
    if (version !== '1') {
      for (const unified of [root, join(root, 'unified')]) {
        const controllers = readOr(join(unified, 'cgroup.controllers'))?.split(/\s+/).filter(Boolean);
        if (!controllers) continue;
        if (!CONTROLLERS.every((c) => controllers.includes(c))) {
          v2Found.push(`${unified} has only ${controllers.join(', ') || 'no controllers'}`);
          continue;
        }
        return new CgroupHierarchy(2, { '': await delegateV2(unified, own.get('') ?? '/') });
      }
      if (version === '2') {
        throw new Error(
          `no cgroup v2 hierarchy with the memory, cpu and pids controllers at ${root} or ${join(root, 'unified')}` +
            (v2Found.length ? ` (${v2Found.join('; ')})` : ''),
        );
      }
    }
    const parents: Record<string, string> = {};
    for (const controller of CONTROLLERS) {
      const mount = join(root, controller);
      if (!existsSync(join(mount, 'cgroup.procs'))) {
        throw new Error(
          version === '1'
            ? `no cgroup v1 ${controller} controller at ${mount}`
            : `no cgroup ${controller} controller: neither a cgroup v2 hierarchy with memory, cpu and pids nor a v1 mount at ${mount}`,
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

/** This process's group per controller (`''` is the v2 one), from the text of /proc/self/cgroup. */
function ownGroups(selfCgroup: string): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of selfCgroup.split('\n')) {
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

/**
 * Makes `<own group>/slipway` a group whose children get the memory, cpu and pids
 * controllers, and returns it. v2's "no internal processes" rule: a group holding processes
 * cannot hand controllers down, so when the platform's own group (not the root, which is
 * exempt) must enable them, its processes first move to a leaf `<own group>/platform`, the way
 * a delegated service (systemd `Delegate=yes`) does.
 */
async function delegateV2(mount: string, ownPath: string): Promise<string> {
  const own = join(mount, ownPath);
  const available = readOr(join(own, 'cgroup.controllers'))?.split(/\s+/) ?? [];
  const missing = CONTROLLERS.filter((c) => !available.includes(c));
  if (missing.length > 0) {
    throw new Error(`the platform's cgroup ${own} is not given ${missing.join(', ')} (delegate them to it, e.g. systemd Delegate=yes)`);
  }
  const enable = CONTROLLERS.map((c) => `+${c}`).join(' ');
  const enabled = readOr(join(own, 'cgroup.subtree_control'))?.split(/\s+/) ?? [];
  if (!CONTROLLERS.every((c) => enabled.includes(c))) {
    if (ownPath !== '/') await moveProcesses(own, join(own, 'platform'));
    await writeFile(join(own, 'cgroup.subtree_control'), enable);
  }
  const parent = join(own, 'slipway');
  await mkdir(parent, { recursive: true });
  await writeFile(join(parent, 'cgroup.subtree_control'), enable);
  return parent;
}

/** Moves every process of group `from` into the (new) group `to`. */
async function moveProcesses(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const pid of (readOr(join(from, 'cgroup.procs')) ?? '').split(/\s+/).filter(Boolean)) {
    // One at a time (the kernel takes one pid a write); one that exited meanwhile is skipped.
    await appendFile(join(to, 'cgroup.procs'), `${pid}\n`).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ESRCH') throw err;
    });
  }
}

/** How long a group's removal waits for the kernel to let go of its exited processes. */
const REMOVE_PATIENCE_MS = 1000;

async function removeDirs(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    const deadline = Date.now() + REMOVE_PATIENCE_MS;
    // The kernel usually frees a group within milliseconds of its last process's exit: retried
    // soon, then less often (a fixed 50 ms wait was most of a sandboxed command's clean-up).
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || Date.now() >= deadline) return;
        await new Promise((r) => setTimeout(r, Math.min(50, 2 ** attempt)));
      }
    }
  }
}
