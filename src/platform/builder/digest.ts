import { createHash } from 'node:crypto';
import { walkTreeBeneath } from '../fs/beneath.js';

export interface DirectoryDigest {
  /** `sha256:<hex>` over every path, its type, executable bit and content, in sorted order. */
  digest: string;
  files: number;
  bytes: number;
}

/**
 * A content digest of a directory tree: the same files give the same id, wherever they live.
 * The tree is a build's output (tenant-written): it is walked through held directory fds
 * without following symlinks (see fs/beneath.ts), so a link or a swap mid-walk never makes
 * the platform read outside it.
 */
export async function directoryDigest(root: string): Promise<DirectoryDigest> {
  const hash = createHash('sha256');
  let files = 0;
  let bytes = 0;
  await walkTreeBeneath(root, async (entry) => {
    if (entry.kind === 'symlink') {
      hash.update(`l ${entry.rel}\0${entry.target}\0`);
    } else if (entry.kind === 'directory') {
      hash.update(`d ${entry.rel}\0`);
    } else if (entry.kind === 'file') {
      files++;
      const exec = entry.mode & 0o111 ? 'x' : '-';
      const content = createHash('sha256');
      for await (const chunk of entry.chunks()) {
        content.update(chunk);
        bytes += chunk.length;
      }
      hash.update(`f ${exec} ${entry.rel}\0${content.digest('hex')}\0`);
    }
  });
  return { digest: `sha256:${hash.digest('hex')}`, files, bytes };
}
