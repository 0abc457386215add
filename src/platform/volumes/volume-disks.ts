import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readFile, rmdir, stat, statfs, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** What a volume's disk holds now, in bytes (the file system's own count, journal and metadata included). */
export interface VolumeUsage {
  usedBytes: number;
  sizeBytes: number;
}

/**
 * The local runtime's volumes: one ext4 image file per volume under DATA_DIR/volumes/<id>,
 * loop-mounted at DATA_DIR/volumes/<id>/mount and bind-mounted into the instance's sandbox. The
 * size is the file system's, so a write past it fails with ENOSPC inside the instance, whatever
 * the file system of DATA_DIR can do (no project quotas needed). The image is sparse: a volume
 * takes on disk what was written.
 *
 * Everything here is a path the platform made (DATA_DIR/volumes/<uuid>); the tenant writes only
 * inside the mounted file system, which the platform never reads except through statfs. Its root
 * is created owned by the application's sandbox user (mkfs's root_owner), so nothing is chowned.
 */
export class VolumeDisks {
  constructor(private readonly root: string) {}

  /** Where the volume's file system is mounted on the host (what the sandbox binds). */
  mountPoint(id: string): string {
    return join(this.directory(id), 'mount');
  }

  /** Makes the disk (first time) and mounts it (first time since boot); idempotent. */
  async ensure(volume: { id: string; sizeMiB: number }, ownerUid: number): Promise<string> {
    const dir = this.directory(volume.id);
    const image = join(dir, 'disk.img');
    const mount = this.mountPoint(volume.id);
    if (await this.isMounted(mount)) return mount;
    await mkdir(mount, { recursive: true, mode: 0o711 });
    await this.refuseLinks(dir, image, mount);
    // The sandbox user (bubblewrap mounts as it) walks through to its bind: searchable, never listable.
    await chmod(dir, 0o711);
    await searchable(this.root);
    if (!(await exists(image))) {
      await exec('truncate', ['-s', `${volume.sizeMiB}M`, image]);
      // -m 0: no blocks kept for root (the instance never is); root_owner: the top directory is the app's.
      await exec('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${ownerUid}:${ownerUid}`, image]);
    }
    await exec('mount', ['-o', 'loop,nosuid,nodev', image, mount]);
    return mount;
  }

  /** Grows the disk to `sizeMiB` (online when mounted); shrinking is refused by the service before this. */
  async grow(volume: { id: string; sizeMiB: number }, ownerUid: number): Promise<void> {
    await this.ensure(volume, ownerUid);
    const image = join(this.directory(volume.id), 'disk.img');
    await exec('truncate', ['-s', `${volume.sizeMiB}M`, image]);
    const device = await this.loopDevice(image);
    if (!device) throw new Error(`the disk of volume ${volume.id} is not attached to a loop device`);
    await exec('losetup', ['-c', device]);
    await exec('resize2fs', [device]);
  }

  /** How full the volume is; null when its disk is not mounted here (never started, or another node's). */
  async usage(id: string): Promise<VolumeUsage | null> {
    const mount = this.mountPoint(id);
    if (!(await this.isMounted(mount))) return null;
    const s = await statfs(mount);
    return { usedBytes: (s.blocks - s.bfree) * s.bsize, sizeBytes: s.blocks * s.bsize };
  }

  /**
   * Unmounts (lazily: an instance that still has it open keeps it until it stops) and removes
   * the disk and its directory: the data is gone.
   */
  async remove(id: string): Promise<void> {
    const dir = this.directory(id);
    const mount = this.mountPoint(id);
    if (await this.isMounted(mount)) await exec('umount', ['-l', mount]);
    await this.refuseLinks(dir, join(dir, 'disk.img'), mount);
    await unlink(join(dir, 'disk.img')).catch(ignoreMissing);
    await rmdir(mount).catch(ignoreMissing);
    await rmdir(dir).catch(ignoreMissing);
  }

  private directory(id: string): string {
    // Ids are uuids the platform chose; anything else never reaches a path.
    if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`not a volume id: ${id}`);
    return join(this.root, id);
  }

  /** None of the platform's own paths may be a symbolic link (they never are unless planted). */
  private async refuseLinks(...paths: string[]) {
    for (const p of [this.root, ...paths]) {
      const s = await lstat(p).catch(() => null);
      if (s?.isSymbolicLink()) throw new Error(`refusing a symbolic link at ${p}`);
    }
  }

  private async isMounted(mount: string): Promise<boolean> {
    const info = await readFile('/proc/self/mountinfo', 'utf8');
    return info.split('\n').some((line) => unescapeMountField(line.split(' ')[4] ?? '') === mount);
  }

  private async loopDevice(image: string): Promise<string | null> {
    const { stdout } = await exec('losetup', ['-j', image]);
    return stdout.split(':')[0]?.trim() || null;
  }
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Adds the search bit (never read) to `dir` and its parents that lack it, as the sandbox does for its binds. */
async function searchable(dir: string): Promise<void> {
  for (let d = dir; ; d = dirname(d)) {
    const mode = (await stat(d)).mode & 0o7777;
    if ((mode & 0o001) === 0) await chmod(d, mode | 0o001);
    if (d === dirname(d)) return;
  }
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}

function ignoreMissing(err: NodeJS.ErrnoException) {
  if (err.code !== 'ENOENT') throw err;
}
