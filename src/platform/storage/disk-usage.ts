import { lstat } from 'node:fs/promises';
import { removeBeneath } from '../fs/beneath.js';
import { isAbsolute, relative } from 'node:path';
import { run } from '../git/command.js';

/**
 * Bytes under each root (apparent size, plus {@link BYTES_PER_INODE} per entry), as `du -s -x -b -P` counts them: a symbolic link is
 * counted as the link itself and never followed (`-P`), the walk stays on the root's file
 * system (`-x`), and GNU du's fts walk opens each directory without following links
 * (O_NOFOLLOW, checked against what it listed), so a tenant who swaps a directory for a link
 * mid-walk makes it count the link, not the target. The roots are directories the platform
 * made (an application's artifacts, build storage, caches); a root that is missing or is not
 * a real directory counts 0.
 */
export async function bytesUnder(roots: string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>(roots.map((r) => [r, 0]));
  const present: string[] = [];
  for (const root of roots) {
    const stat = await lstat(root).catch(() => null);
    if (stat?.isDirectory()) present.push(root);
  }
  if (present.length === 0) return sizes;
  // `du` exits 1 when a file vanished during the walk (a build finishing): what it printed still counts.
  const count = async (unit: string, weight: number) => {
    const result = await run('du', ['-s', '-x', unit, '-P', '--', ...present]);
    for (const line of result.stdout.split('\n')) {
      const tab = line.indexOf('\t');
      if (tab < 0) continue;
      const path = line.slice(tab + 1);
      if (sizes.has(path)) sizes.set(path, sizes.get(path)! + (Number(line.slice(0, tab)) || 0) * weight);
    }
  };
  await count('-b', 1);
  // Empty files have no apparent size but each takes an inode, which the host runs out of
  // before its bytes: every file, directory and link also counts as one block.
  await count('--inodes', BYTES_PER_INODE);
  return sizes;
}

/** What each file, directory or link counts for beyond its content (one file system block). */
export const BYTES_PER_INODE = 4096;

/** True when `path` is strictly beneath `root` (both absolute, as the platform builds them). */
export function beneath(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/**
 * Removes a tree the platform made under `root` whose insides a tenant may have written, and
 * which a tenant process may still be writing (a one-off started on the release just before
 * it was collected): every directory is held open and emptied through its fd, never walked
 * by path, so a directory swapped for a symlink mid-removal is removed as a link and its
 * target never touched (see fs/beneath.ts `removeBeneath`; test/isolation/review-variants.test.ts).
 */
export async function removeTreeBeneath(root: string, path: string): Promise<void> {
  if (!beneath(root, path)) throw new Error(`refusing to remove ${path}: not beneath ${root}`);
  if (!(await lstat(root).catch(() => null))?.isDirectory()) return;
  await removeBeneath(root, relative(root, path));
}
