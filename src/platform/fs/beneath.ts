import { constants, close, type Dirent, fchmod, fstat, open, read, readdir, readlink, rmdir, unlink, type Stats } from 'node:fs';
import { isAbsolute } from 'node:path';
import { promisify } from 'node:util';

/**
 * Opening paths of a tree a tenant can write (a checkout, a build's output, an image's root
 * file system) from privileged code, with openat2's `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`
 * semantics. Node has no openat2, so the walk goes one component at a time: each directory is
 * held open, the next component is opened through `/proc/self/fd/<fd>/<name>` (the magic link
 * lands on the directory already open, whatever its path became) with `O_NOFOLLOW`, so no
 * component can be a symbolic link, and `..` or an absolute path is refused before anything is
 * opened. What is read is the inode that was checked: nothing is looked up twice by path.
 *
 * Errors name only the relative path and why (never content), so they can go into a record.
 */

/** `O_PATH` (Linux, all common architectures): an fd that names an inode without opening it (no FIFO blocks, no device side effect). */
const O_PATH = 0o10000000;
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NOCTTY } = constants;

const openFd = promisify(open);
const closeFd = promisify(close);
const fstatFd = promisify(fstat);
const readFd = promisify(read);
const fchmodFd = promisify(fchmod);
const readdirPath = promisify(readdir);
const readlinkPath = promisify(readlink);

/** A path beneath a root that privileged code refuses to follow (symlink, not a regular file, too large, `..`). */
export class UnsafePathError extends Error {
  constructor(
    readonly relativePath: string,
    reason: string,
  ) {
    super(`${relativePath || '.'} ${reason}`);
    this.name = 'UnsafePathError';
  }
}

export type EntryKind = 'file' | 'directory' | 'symlink' | 'other';

export interface BeneathStat {
  kind: EntryKind;
  size: number;
  mode: number;
  uid: number;
}

const fdPath = (fd: number, name?: string) => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

const kindOf = (s: Stats): EntryKind => (s.isSymbolicLink() ? 'symlink' : s.isDirectory() ? 'directory' : s.isFile() ? 'file' : 'other');

/** The components of a relative path; `..`, absolute paths, empty components and NUL bytes are refused. */
export function pathComponents(rel: string): string[] {
  if (isAbsolute(rel) || rel.includes('\0')) throw new UnsafePathError('(path)', 'is not a relative path beneath its root');
  const parts = rel.split('/').filter((p) => p !== '.');
  if (parts.some((p) => p === '..' || p === '')) throw new UnsafePathError(rel, 'is not a plain relative path (no "..", no empty parts)');
  return parts;
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** Opens the root itself: a real directory (its last component not a symlink), as an `O_PATH` fd. */
async function openRoot(root: string): Promise<number> {
  if (!isAbsolute(root)) throw new Error(`the root of a guarded walk must be absolute (got ${root})`);
  try {
    return await openFd(root, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  } catch (err) {
    if (errno(err) === 'ELOOP' || errno(err) === 'ENOTDIR') throw new UnsafePathError('.', 'is a symbolic link or not a directory');
    throw err;
  }
}

/**
 * Walks `rel` beneath `root` without following a symlink at any component and returns an
 * `O_PATH` fd of the last component itself (a symlink there is returned, not followed: the
 * caller decides), or null when some component does not exist. The caller closes the fd.
 */
async function walk(root: string, rel: string): Promise<number | null> {
  const parts = pathComponents(rel);
  let dir = await openRoot(root);
  try {
    for (const [i, name] of parts.entries()) {
      const last = i === parts.length - 1;
      let next: number;
      try {
        next = await openFd(fdPath(dir, name), O_PATH | O_NOFOLLOW | (last ? 0 : O_DIRECTORY));
      } catch (err) {
        if (errno(err) === 'ENOENT') return null;
        if (errno(err) === 'ENOTDIR' || errno(err) === 'ELOOP') {
          const prefix = parts.slice(0, i + 1).join('/');
          const kind = await kindAt(dir, name);
          throw new UnsafePathError(prefix, kind === 'symlink' ? 'is a symbolic link' : 'is not a directory');
        }
        throw err;
      }
      await closeFd(dir);
      dir = next;
    }
    const found = dir;
    dir = -1;
    return found;
  } finally {
    if (dir >= 0) await closeFd(dir).catch(() => {});
  }
}

async function kindAt(dirFd: number, name: string): Promise<EntryKind | null> {
  try {
    const fd = await openFd(fdPath(dirFd, name), O_PATH | O_NOFOLLOW);
    try {
      return kindOf(await fstatFd(fd));
    } finally {
      await closeFd(fd);
    }
  } catch {
    return null;
  }
}

/** What `rel` is (the last component not followed), or null when it does not exist. */
export async function statBeneath(root: string, rel: string): Promise<BeneathStat | null> {
  const fd = await walk(root, rel);
  if (fd === null) return null;
  try {
    const s = await fstatFd(fd);
    return { kind: kindOf(s), size: s.size, mode: s.mode & 0o7777, uid: s.uid };
  } finally {
    await closeFd(fd);
  }
}

/** Whether `rel` exists beneath `root` (of any kind, a symlink included) with no symlink on the way. */
export async function existsBeneath(root: string, rel: string): Promise<boolean> {
  return (await statBeneath(root, rel)) !== null;
}

/** Reads the regular file open as `pathFd`, refusing more than `maxBytes`. */
async function readRegular(pathFd: number, rel: string, maxBytes: number): Promise<Buffer> {
  const s = await fstatFd(pathFd);
  if (s.isSymbolicLink()) throw new UnsafePathError(rel, 'is a symbolic link');
  if (!s.isFile()) throw new UnsafePathError(rel, 'is not a regular file');
  if (s.size > maxBytes) throw new UnsafePathError(rel, `is larger than ${maxBytes} bytes`);
  // Reopened through the fd: the same inode that was checked, whatever its path is now.
  const fd = await openFd(fdPath(pathFd), O_RDONLY | O_NOCTTY);
  try {
    // One byte more than allowed tells a file that grew after the fstat.
    let buffer = Buffer.alloc(Math.min(maxBytes + 1, s.size + 1));
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) throw new UnsafePathError(rel, `is larger than ${maxBytes} bytes`);
        const bigger = Buffer.alloc(Math.min(maxBytes + 1, buffer.length * 2));
        buffer.copy(bigger);
        buffer = bigger;
      }
      const { bytesRead } = await readFd(fd, buffer, length, buffer.length - length, null);
      if (bytesRead === 0) return buffer.subarray(0, length);
      length += bytesRead;
    }
  } finally {
    await closeFd(fd);
  }
}

/**
 * The content of the regular file `rel` beneath `root`, at most `maxBytes`; null when it does
 * not exist. A symlink at any component, a FIFO, device or directory, or a larger file throws
 * {@link UnsafePathError} (nothing is opened for reading then).
 */
export async function readFileBeneath(root: string, rel: string, maxBytes: number): Promise<Buffer | null> {
  const fd = await walk(root, rel);
  if (fd === null) return null;
  try {
    return await readRegular(fd, rel, maxBytes);
  } finally {
    await closeFd(fd);
  }
}

/** {@link readFileBeneath} as UTF-8 text. */
export async function readTextBeneath(root: string, rel: string, maxBytes: number): Promise<string | null> {
  return (await readFileBeneath(root, rel, maxBytes))?.toString('utf8') ?? null;
}

/**
 * A directory beneath a root, held open: `path` names it through this process's fd table,
 * so a program started now (`mknod <path>/null`) acts in exactly this directory even if a
 * tenant renames or replaces its path. `close()` when done.
 */
export interface HeldDirectory {
  path: string;
  close(): Promise<void>;
}

/** Opens the directory `rel` beneath `root` (no symlink at any component; `''` is the root itself); null when absent. */
export async function holdDirectoryBeneath(root: string, rel: string): Promise<HeldDirectory | null> {
  const pathFd = await walk(root, rel);
  if (pathFd === null) return null;
  try {
    const s = await fstatFd(pathFd);
    if (!s.isDirectory()) throw new UnsafePathError(rel, s.isSymbolicLink() ? 'is a symbolic link' : 'is not a directory');
    const fd = await openFd(fdPath(pathFd), O_RDONLY | O_DIRECTORY);
    return { path: `/proc/${process.pid}/fd/${fd}`, close: () => closeFd(fd) };
  } finally {
    await closeFd(pathFd);
  }
}

/** Sets the mode of `rel` beneath `root` (a directory or regular file; a symlink is refused, never followed). */
export async function chmodBeneath(root: string, rel: string, mode: number): Promise<void> {
  const pathFd = await walk(root, rel);
  if (pathFd === null) throw new UnsafePathError(rel, 'does not exist');
  try {
    const s = await fstatFd(pathFd);
    if (!s.isDirectory() && !s.isFile()) throw new UnsafePathError(rel, 'is a symbolic link or not a regular file or directory');
    const fd = await openFd(fdPath(pathFd), O_RDONLY | O_NOCTTY | (s.isDirectory() ? O_DIRECTORY : 0));
    try {
      await fchmodFd(fd, mode);
    } finally {
      await closeFd(fd);
    }
  } finally {
    await closeFd(pathFd);
  }
}

/** One entry of a guarded walk: its path relative to the root and what it is. */
export type TreeEntry =
  | { rel: string; kind: 'directory'; mode: number }
  | { rel: string; kind: 'symlink'; target: string }
  | { rel: string; kind: 'file'; mode: number; size: number; chunks: () => AsyncIterable<Buffer> }
  | { rel: string; kind: 'other' };

/** Deeper than this and a walk stops with an error (each level holds one open directory). */
export const MAX_TREE_DEPTH = 256;
const CHUNK = 64 * 1024;

/**
 * Visits every entry of the tree beneath `root` in sorted order, depth first, each directory
 * held open while its entries are visited and each entry opened through it without following
 * symlinks: a tenant swapping a directory for a symlink mid-walk makes the walk see the
 * symlink, never its target. A file's `chunks` reads the inode that was checked.
 */
export async function walkTreeBeneath(root: string, visit: (entry: TreeEntry) => Promise<void>): Promise<void> {
  const rootFd = await openRoot(root);
  const walkDir = async (dirFd: number, prefix: string, depth: number): Promise<void> => {
    if (depth > MAX_TREE_DEPTH) throw new UnsafePathError(prefix, `is nested deeper than ${MAX_TREE_DEPTH} directories`);
    const names = ((await readdirPath(fdPath(dirFd))) as string[]).sort();
    for (const name of names) {
      const rel = prefix ? `${prefix}/${name}` : name;
      let fd: number;
      try {
        fd = await openFd(fdPath(dirFd, name), O_PATH | O_NOFOLLOW);
      } catch (err) {
        if (errno(err) === 'ENOENT') continue; // removed since it was listed
        throw err;
      }
      try {
        const s = await fstatFd(fd);
        if (s.isSymbolicLink()) {
          // Only the link's text is read (what it points to is never opened).
          const target = await readlinkPath(fdPath(dirFd, name)).catch(() => '');
          await visit({ rel, kind: 'symlink', target: String(target) });
        } else if (s.isDirectory()) {
          await visit({ rel, kind: 'directory', mode: s.mode & 0o7777 });
          const sub = await openFd(fdPath(fd), O_RDONLY | O_DIRECTORY);
          try {
            await walkDir(sub, rel, depth + 1);
          } finally {
            await closeFd(sub);
          }
        } else if (s.isFile()) {
          const pathFd = fd;
          await visit({ rel, kind: 'file', mode: s.mode & 0o7777, size: s.size, chunks: () => fileChunks(pathFd) });
        } else {
          await visit({ rel, kind: 'other' });
        }
      } finally {
        await closeFd(fd);
      }
    }
  };
  try {
    const fd = await openFd(fdPath(rootFd), O_RDONLY | O_DIRECTORY);
    try {
      await walkDir(fd, '', 1);
    } finally {
      await closeFd(fd);
    }
  } finally {
    await closeFd(rootFd);
  }
}

async function* fileChunks(pathFd: number): AsyncIterable<Buffer> {
  const fd = await openFd(fdPath(pathFd), O_RDONLY | O_NOCTTY);
  try {
    const buffer = Buffer.alloc(CHUNK);
    for (;;) {
      const { bytesRead } = await readFd(fd, buffer, 0, CHUNK, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await closeFd(fd);
  }
}

const rmdirPath = promisify(rmdir);
const unlinkPath = promisify(unlink);
const readdirTyped = (path: string) => readdirPath(path, { withFileTypes: true }) as Promise<Dirent[]>;

/**
 * Removes `rel` beneath `root` and everything below it, for trees a tenant process may still
 * be writing. Each directory is held open and its entries are removed through it
 * (`/proc/self/fd/<dir>/<name>`: unlink and rmdir never follow the last component), so a
 * directory swapped for a symlink half-way is removed as a link and nothing outside the
 * directories opened is ever touched. Missing entries are skipped; `rel` must not be `''`.
 */
export async function removeBeneath(root: string, rel: string): Promise<void> {
  const parts = pathComponents(rel);
  if (parts.length === 0) throw new UnsafePathError('.', 'is the root itself');
  const parentRel = parts.slice(0, -1).join('/');
  const parentPath = parentRel === '' ? await openRoot(root) : await walk(root, parentRel);
  if (parentPath === null) return;
  let parent: number;
  try {
    parent = await openFd(fdPath(parentPath), O_RDONLY | O_DIRECTORY);
  } finally {
    await closeFd(parentPath);
  }
  try {
    await removeEntry(parent, parts[parts.length - 1]!, rel, 1);
  } finally {
    await closeFd(parent);
  }
}

/** Entries unlinked at once within one directory: the thread pool works while the walk waits (a release holds ~10^5 files). */
const UNLINKS_AT_ONCE = 32;

async function removeEntry(dirFd: number, name: string, rel: string, depth: number): Promise<void> {
  // One call for anything that is not a directory (file, link, socket): unlink never follows the
  // link it removes. Linux answers EISDIR for a directory, which is then emptied through its fd.
  try {
    await unlinkPath(fdPath(dirFd, name));
    return;
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    if (errno(err) !== 'EISDIR') throw err;
  }
  if (depth > MAX_TREE_DEPTH) throw new UnsafePathError(rel, `is nested deeper than ${MAX_TREE_DEPTH} directories`);
  let sub: number;
  try {
    sub = await openFd(fdPath(dirFd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    // Swapped for a link or a file since the unlink: remove what is there now, as what it is.
    if (errno(err) === 'ELOOP' || errno(err) === 'ENOTDIR') return removeEntry(dirFd, name, rel, depth + 1);
    throw err;
  }
  try {
    const entries = await readdirTyped(fdPath(sub));
    // Directories one at a time (each holds an fd while it is emptied); the rest in batches.
    const others = entries.filter((e) => !e.isDirectory()).map((e) => e.name);
    for (let k = 0; k < others.length; k += UNLINKS_AT_ONCE)
      await Promise.all(others.slice(k, k + UNLINKS_AT_ONCE).map((child) => removeEntry(sub, child, `${rel}/${child}`, depth + 1)));
    for (const e of entries) if (e.isDirectory()) await removeEntry(sub, e.name, `${rel}/${e.name}`, depth + 1);
  } finally {
    await closeFd(sub);
  }
  await rmdirPath(fdPath(dirFd, name)).catch((err: unknown) => {
    // Swapped for a link or a file since it was emptied: remove that entry itself.
    if (errno(err) === 'ENOTDIR') return unlinkPath(fdPath(dirFd, name));
    if (errno(err) !== 'ENOENT') throw err;
  });
}
