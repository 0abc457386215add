import { lstat, rm } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import { run } from '../git/command.js';

/**
 * Bytes under each root (apparent size), as `du -s -x -b -P` counts them: a symbolic link is
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
  const result = await run('du', ['-s', '-x', '-b', '-P', '--', ...present]);
  for (const line of result.stdout.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const path = line.slice(tab + 1);
    if (sizes.has(path)) sizes.set(path, Number(line.slice(0, tab)) || 0);
  }
  return sizes;
}

/** True when `path` is strictly beneath `root` (both absolute, as the platform builds them). */
export function beneath(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/**
 * Removes a tree the platform made under `root` whose insides a tenant may have written.
 * Node's `fs.rm` (recursive) lstat()s every entry and unlinks a symbolic link as a link: it
 * never descends into or deletes a link's target (test/isolation/quota-and-gc.test.ts plants
 * one to a host directory). Called only on trees no running sandbox can write (an image no
 * kept release, deployment or build references), so nothing swaps a component mid-walk.
 */
export async function removeTreeBeneath(root: string, path: string): Promise<void> {
  if (!beneath(root, path)) throw new Error(`refusing to remove ${path}: not beneath ${root}`);
  const stat = await lstat(path).catch(() => null);
  if (!stat) return;
  // The tree's own root is platform-made; if it is a link now, remove the link and nothing else.
  await rm(path, { recursive: stat.isDirectory(), force: true });
}
