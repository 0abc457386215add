import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';

/** What a sandboxed command sees of the file system and who it is inside. */
export interface SandboxView {
  /** Working directory inside the sandbox. */
  cwd: string;
  /** Directories bound read-write at their own path (the app's slug or build directory, its caches). */
  writable: string[];
  /** An image's unpacked root file system, bound as `/` instead of the host's system directories. */
  root?: string;
  /** uid:gid the command sees itself as (an image's USER); outside it is always the sandbox user. */
  innerUser?: { uid: number; gid: number };
  /**
   * Root inside its own user namespace (only the sandbox user mapped, as 0) with that
   * namespace's capabilities: what a container builder (buildah) needs to chroot and mount
   * inside. The platform writes the uid/gid map itself (see `runSandboxed`), which keeps
   * `setgroups` allowed. Outside the namespace it is still only the sandbox user.
   */
  mappedRoot?: boolean;
  /**
   * The platform's own directories (DATA_DIR, build storage, its checkout): when one lies
   * below a system directory the sandbox binds (Slipway run from /opt/slipway with the
   * default `./data`), an empty read-only tmpfs covers it, so no sandbox sees another
   * application's caches or anything else of the platform's there.
   */
  hidden?: string[];
  /** Host directories bound read-write at another path inside (persistent volumes), after everything else. */
  mounts?: Array<{ source: string; target: string }>;
}

/** The host's system directories, read-only: programs and libraries, nothing of the platform's. */
const SYSTEM_DIRS = ['/usr', '/etc', '/opt'];
/** Usually symlinks into /usr (merged /usr); bound when they are real directories. */
const TOP_LEVEL_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * bubblewrap arguments for a command run as an unprivileged user: new user, mount, PID,
 * IPC and UTS namespaces; the system read-only (or the image's root); /proc of its own PID
 * namespace only; a private /tmp; only `writable` writable; nothing else of the host (no
 * DATA_DIR, no other application, no Slipway checkout, no /root). Its own network namespace:
 * its loopback is not the host's; the platform attaches pasta for the way out and the
 * instance's port (see `controlSandbox`).
 */
export function bwrapArguments(
  view: SandboxView,
  {
    controlled = true,
    /** Only for a relay of fixed programs, never member code (an add-on's forwarder, src/platform/addons/forwarder.ts): the host's network. */
    hostNetwork = false,
    /** false: it outlives the process that started it (a detached relay, ended by its own group). */
    dieWithParent = true,
  } = {},
): string[] {
  const args = [
    '--unshare-user',
    // Unless only probing whether bubblewrap works here: fd 3: wait until the platform has written the user map; fd 4: tells it the child's pid;
    // fd 5: wait until the platform has attached the network.
    ...(controlled ? ['--userns-block-fd', '3', '--info-fd', '4', '--block-fd', '5'] : []),
    // A mapped root configures nothing of its network namespace (it belongs to its user
    // namespace): no rewritten addresses, no raw frames towards pasta.
    ...(view.mappedRoot
      ? ['--uid', '0', '--gid', '0', '--cap-add', 'ALL', '--cap-drop', 'CAP_NET_ADMIN', '--cap-drop', 'CAP_NET_RAW']
      : []),
    ...(hostNetwork ? [] : ['--unshare-net']),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    // The sandbox dies with its launcher: a stopped or killed instance leaves nothing behind.
    ...(dieWithParent ? ['--die-with-parent'] : []),
  ];
  if (view.root) {
    args.push('--bind', view.root, '/');
  } else {
    for (const dir of SYSTEM_DIRS) if (existsSync(dir)) args.push('--ro-bind', dir, dir);
    for (const path of TOP_LEVEL_LINKS) {
      const stat = lstatOrNull(path);
      if (stat?.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (stat?.isDirectory()) args.push('--ro-bind', path, path);
    }
  }
  const hidden = view.root ? [] : hiddenBelowSystemDirs(view.hidden ?? []);
  for (const dir of hidden) args.push('--tmpfs', dir);
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  // A builder writes below /var/tmp and bind-mounts /sys into its build containers (an empty one here).
  if (view.mappedRoot) args.push('--tmpfs', '/var/tmp', '--dir', '/sys');
  else args.push('--dir', '/var/tmp');
  // Bound after /tmp: a directory below /tmp (test data dirs) shows on top of the private one.
  if (!view.root) for (const dir of view.writable) args.push('--bind', dir, dir);
  // Volumes last: nothing bound later may cover them (bubblewrap makes the mount point).
  for (const m of view.mounts ?? []) args.push('--bind', m.source, m.target);
  // The sandbox's own root (a tmpfs holding the mount points) is read-only too.
  if (!view.root) args.push('--remount-ro', '/');
  for (const dir of hidden) args.push('--remount-ro', dir);
  if (view.innerUser) args.push('--uid', String(view.innerUser.uid), '--gid', String(view.innerUser.gid));
  args.push('--chdir', view.cwd);
  return args;
}

/** The real paths of `dirs` strictly below a bound system directory (what a sandbox would otherwise see), outermost first. */
function hiddenBelowSystemDirs(dirs: string[]): string[] {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return null;
    }
  };
  const bound = [...SYSTEM_DIRS, ...TOP_LEVEL_LINKS].map(real).filter((p): p is string => p !== null);
  const below = dirs
    .map(real)
    .filter((p): p is string => p !== null && bound.some((b) => p.startsWith(b.endsWith(sep) ? b : `${b}${sep}`)));
  return [...new Set(below)].sort((a, b) => a.length - b.length);
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
