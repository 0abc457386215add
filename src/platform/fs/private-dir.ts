import { chmod, lstat, mkdir } from 'node:fs/promises';

/**
 * Makes a directory of the platform's own (below DATA_DIR, never a tenant's path) with
 * exactly `mode`: 0700 for what only the platform reads, 0711 for a directory a sandbox user
 * must pass through to reach its own tree below it (it can neither list nor write it).
 * Missing parents are made with the same mode.
 */
export async function privateDir(path: string, mode: 0o700 | 0o711): Promise<void> {
  await mkdir(path, { recursive: true, mode });
  const info = await lstat(path);
  if (!info.isDirectory()) throw new Error(`${path} is not a directory`);
  if ((info.mode & 0o7777) !== mode) await chmod(path, mode);
}
