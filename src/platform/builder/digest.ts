import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface DirectoryDigest {
  /** `sha256:<hex>` over every path, its type, executable bit and content, in sorted order. */
  digest: string;
  files: number;
  bytes: number;
}

async function fileHash(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** A content digest of a directory tree: the same files give the same id, wherever they live. */
export async function directoryDigest(root: string): Promise<DirectoryDigest> {
  const hash = createHash('sha256');
  let files = 0;
  let bytes = 0;
  const walk = async (relative: string): Promise<void> => {
    const entries = (await readdir(join(root, relative))).sort();
    for (const name of entries) {
      const rel = relative ? `${relative}/${name}` : name;
      const full = join(root, rel);
      const info = await lstat(full);
      if (info.isSymbolicLink()) {
        hash.update(`l ${rel}\0${await readlink(full)}\0`);
      } else if (info.isDirectory()) {
        hash.update(`d ${rel}\0`);
        await walk(rel);
      } else if (info.isFile()) {
        files++;
        bytes += info.size;
        const exec = info.mode & 0o111 ? 'x' : '-';
        hash.update(`f ${exec} ${rel}\0${await fileHash(full)}\0`);
      }
    }
  };
  await walk('');
  return { digest: `sha256:${hash.digest('hex')}`, files, bytes };
}
