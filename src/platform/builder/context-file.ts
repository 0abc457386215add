import { existsBeneath, readTextBeneath, UnsafePathError } from '../fs/beneath.js';
import { BuildError } from './port.js';

/**
 * A file of a build context or a build's output (both tenant-written) as the platform reads
 * it: a regular file inside the tree, reached without following any symlink, at most
 * `maxBytes`; null when absent. Anything else fails the build with a message naming the
 * file, never its content.
 */
export async function readContextFile(dir: string, rel: string, maxBytes: number): Promise<string | null> {
  try {
    return await readTextBeneath(dir, rel, maxBytes);
  } catch (err) {
    if (err instanceof UnsafePathError) {
      throw new BuildError(`${err.message}: the platform reads only regular files inside the build context`);
    }
    throw err;
  }
}

/** Whether `rel` exists in the tree (a symlink counts: reading it then fails clearly); a symlinked parent fails the build. */
export async function contextHas(dir: string, rel: string): Promise<boolean> {
  try {
    return await existsBeneath(dir, rel);
  } catch (err) {
    if (err instanceof UnsafePathError) {
      throw new BuildError(`${err.message}: the platform reads only regular files inside the build context`);
    }
    throw err;
  }
}
