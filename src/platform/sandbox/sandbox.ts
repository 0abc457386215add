import { execFile } from 'node:child_process';
import { stat, mkdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { asSandboxUser } from './setpriv.js';
import { bwrapArguments, type SandboxView } from './bwrap.js';
import { CgroupHierarchy, type Cgroup, type CgroupLimits, type CgroupSettings } from './cgroups.js';
import { makeReachable } from '../fs/search-bits.js';
import { endHelperForwarding, endOrphanedHelpers, type SandboxNetwork } from './network.js';

const exec = promisify(execFile);

/** Where each application's sandbox user comes from (one uid per application). */
export interface UidSource {
  uidFor(applicationId: string): Promise<number>;
  /** An add-on's own user (src/platform/addons). */
  uidForAddon?(addonId: string): Promise<number>;
}

export interface SandboxOptions {
  uids: UidSource;
  /** Most processes (and threads) one sandbox may have at once: a fork bomb stops there. */
  pidsMax: number;
  /** Where the cgroup hierarchy is (default: found below /sys/fs/cgroup, v2 preferred). */
  cgroups?: CgroupSettings;
  /** The sandbox users' uids (SANDBOX_UID_RANGE): leftover network helpers are recognized by them. */
  uidRange?: { first: number; last: number };
  /** Whether sandboxes may connect out (the internet) unless a request says otherwise (default true). */
  outbound?: boolean;
  /** The application's organization's own choice (a site administrator's), when it made one. */
  outboundOf?: (applicationId: string) => Promise<boolean | null>;
  /** Memory and CPU of a request that names none (the builds' sandbox: BUILD_MEMORY_MB, BUILD_CPU_MILLICORES). */
  defaultLimits?: Omit<CgroupLimits, 'pids'>;
  /** The platform's own directories no sandbox may see (see SandboxView.hidden). */
  hiddenPaths?: string[];
}

export interface SandboxRequest {
  /** The application whose user runs the command. */
  applicationId: string;
  /** Instead: the add-on whose user runs it (its server; `applicationId` is then only a label). */
  addonId?: string;
  /** Unique name of the control group (e.g. `instance-<id>`, `build-<app>-<version>`). */
  name: string;
  /** Shell command line, run with `sh -c` inside. */
  command: string;
  view: SandboxView;
  limits?: Omit<CgroupLimits, 'pids'>;
  /** A web instance's forward; `outbound` defaults to the site's setting. */
  network?: { outbound?: boolean; forward?: SandboxNetwork['forward']; hostLoopbackPorts?: number[] };
}

/** A ready sandbox: spawn `file args` (as root: the launcher joins the cgroup, then drops to `uid`). */
export interface PreparedSandbox {
  file: string;
  args: string[];
  uid: number;
  cgroup: Cgroup;
  /** Run it with `runSandboxed` or `controlSandbox` (spawned with CONTROL_PIPES): the platform writes this user map. */
  innerUid: number;
  innerGid: number;
  /** What the platform connects its network namespace to once it started. */
  network: SandboxNetwork;
  /** The limits its control group has (for a message when it is killed for memory). */
  limits: CgroupLimits;
}

/** Raised when the machine cannot sandbox (no bubblewrap, no pasta, no user namespaces, no cgroups). */
export class SandboxUnavailable extends Error {}

/**
 * The launcher, run as root: joins the control groups (before anything is forked, so every
 * descendant is counted), then `exec`s the rest of its arguments: setpriv (drop to the
 * sandbox user, no capabilities, no new privileges) and bwrap.
 */
const LAUNCHER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/**
 * Runs commands of an application as its own unprivileged user in a bubblewrap sandbox
 * (see `bwrapArguments`) inside a control group with the pod class's memory, CPU and pids
 * limits. `ready()` checks once that this machine can do it and fails closed otherwise.
 */
export class Sandbox {
  private probe: Promise<CgroupHierarchy> | null = null;

  constructor(private readonly options: SandboxOptions) {}

  /** Resolves when sandboxing works here; rejects with SandboxUnavailable naming what is missing. */
  async ready(): Promise<void> {
    await this.hierarchy();
  }

  private hierarchy(): Promise<CgroupHierarchy> {
    this.probe ??= probeMachine(this.options.cgroups);
    return this.probe;
  }

  /** Removes a control group a dead platform process left behind (see LocalProcessDriver.reap). */
  async discard(name: string): Promise<void> {
    const hierarchy = await this.hierarchy().catch(() => null);
    await hierarchy?.discard(name);
  }

  /** Ends network helpers a killed platform left behind (see `endOrphanedHelpers`). */
  async endLeftoverNetworks(): Promise<void> {
    if (this.options.uidRange) await endOrphanedHelpers(this.options.uidRange);
  }

  /** Ends a previous platform process's network helper forwarding this host port (see `endHelperForwarding`). */
  async endNetworkForwarding(hostPort: number): Promise<void> {
    if (this.options.uidRange) await endHelperForwarding(this.options.uidRange, hostPort);
  }

  /** The application's sandbox user (files its sandboxes must read are given to it). */
  uidOf(applicationId: string): Promise<number> {
    return this.options.uids.uidFor(applicationId);
  }

  /** Whether `uid` is one of the sandbox users' (SANDBOX_UID_RANGE): a process running as one is a sandbox's. */
  isSandboxUid(uid: number): boolean {
    const range = this.options.uidRange;
    return range !== undefined && uid >= range.first && uid <= range.last;
  }

  /** The platform's directories every sandbox's view covers (SandboxView.hidden). */
  get hiddenPaths(): string[] {
    return this.options.hiddenPaths ?? [];
  }

  /** The add-on's own sandbox user. */
  addonUid(addonId: string): Promise<number> {
    if (!this.options.uids.uidForAddon) throw new Error('this sandbox has no add-on users');
    return this.options.uids.uidForAddon(addonId);
  }

  async prepare(request: SandboxRequest): Promise<PreparedSandbox> {
    const hierarchy = await this.hierarchy();
    const uid = request.addonId ? await this.addonUid(request.addonId) : await this.options.uids.uidFor(request.applicationId);
    const limits = { ...(request.limits ?? this.options.defaultLimits), pids: this.options.pidsMax };
    // Independent of one another: side by side (each `chown -R` is a process of its own, 5–15 ms).
    const [made, ...dirs] = await Promise.allSettled([
      hierarchy.create(request.name, limits),
      ...[...request.view.writable, ...(request.view.root ? [request.view.root] : [])].map(async (dir) => {
        await mkdir(dir, { recursive: true });
        await ownedBy(dir, uid);
        await makeReachable(dir);
      }),
    ]);
    const failed = dirs.find((d) => d.status === 'rejected');
    if (made.status === 'rejected' || failed) {
      if (made.status === 'fulfilled') await made.value.remove();
      throw made.status === 'rejected' ? made.reason : (failed as PromiseRejectedResult).reason;
    }
    const cgroup = made.value;
    const args = [
      '-c',
      LAUNCHER,
      'slipway-sandbox',
      ...cgroup.procsFiles,
      '--',
      // A mapped root needs its namespace's capabilities after exec; outside, setuid programs stay inert (no new privileges).
      ...asSandboxUser(uid, { keepBoundingSet: request.view.mappedRoot === true }),
      'bwrap',
      ...bwrapArguments({ ...request.view, hidden: [...(request.view.hidden ?? []), ...(this.options.hiddenPaths ?? [])] }),
      '/bin/sh',
      '-c',
      request.command,
    ];
    const inner = request.view.mappedRoot ? { uid: 0, gid: 0 } : (request.view.innerUser ?? { uid, gid: uid });
    const network: SandboxNetwork = {
      outbound: request.network?.outbound ?? (await this.options.outboundOf?.(request.applicationId)) ?? this.options.outbound ?? true,
      ...(request.network?.forward ? { forward: request.network.forward } : {}),
      ...(request.network?.hostLoopbackPorts ? { hostLoopbackPorts: request.network.hostLoopbackPorts } : {}),
    };
    return { file: '/bin/sh', args, uid, cgroup, limits, innerUid: inner.uid, innerGid: inner.gid, network };
  }
}

async function probeMachine(cgroups: CgroupSettings = {}): Promise<CgroupHierarchy> {
  for (const [program, pkg] of [
    ['bwrap', 'bubblewrap'],
    ['setpriv', 'util-linux'],
    // Each sandbox has its own network namespace; pasta is its only way out and the instance's way in.
    ['pasta', 'passt'],
  ] as const) {
    try {
      await exec(program, ['--version']);
    } catch {
      throw new SandboxUnavailable(`${program} is not installed (Debian package ${pkg})`);
    }
  }
  if (process.getuid?.() !== 0) throw new SandboxUnavailable('the platform must run as root to start sandboxes as other users');
  try {
    // A throwaway user that owns nothing: proves unprivileged user and PID namespaces work here.
    await exec(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--no-new-privs',
        'bwrap',
        ...bwrapArguments({ cwd: '/', writable: [] }, { controlled: false }),
        '/bin/true',
      ],
      { cwd: '/' },
    );
  } catch (err) {
    const detail = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim().split('\n').pop();
    throw new SandboxUnavailable(`bubblewrap cannot create user namespaces here (${detail})`);
  }
  try {
    return await CgroupHierarchy.detect(cgroups);
  } catch (err) {
    throw new SandboxUnavailable(`cgroups are not usable: ${(err as Error).message}`);
  }
}

/** Gives the directory (recursively) to the sandbox user, once: a directory it already owns is left as is. */
async function ownedBy(dir: string, uid: number): Promise<void> {
  if ((await stat(dir)).uid === uid) return;
  await exec('chown', ['-R', '--no-dereference', `${uid}:${uid}`, dir]);
}
