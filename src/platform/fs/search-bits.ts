import { chmod, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Adds the search bit (never read) to `dir`'s parents that lack it, and to `dir` itself with
 * `self`: bubblewrap mounts as the sandbox user, which must be able to walk to what it binds.
 * Nothing becomes listable. Only for the platform's own directories.
 */
export async function makeReachable(dir: string, { self = false } = {}): Promise<void> {
  for (let d = self ? dir : dirname(dir); ; d = dirname(d)) {
    const mode = (await stat(d)).mode & 0o7777;
    if ((mode & 0o001) === 0) await chmod(d, mode | 0o001);
    if (d === dirname(d)) return;
  }
}
