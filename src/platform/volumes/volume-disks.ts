import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readFile, rmdir, statfs, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { makeReachable } from '../fs/search-bits.js';
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

  /**
   * Makes the disk (first time), grows it to the recorded size when it is not mounted (ext4 grows
   * offline; online resizing needs more than this platform may have), and mounts it; idempotent.
   */
  async ensure(volume: { id: string; sizeMiB: number }, ownerUid: number): Promise<string> {
    const dir = this.directory(volume.id);
    const image = join(dir, 'disk.img');
    const mount = this.mountPoint(volume.id);
    if (await this.isMounted(mount)) return mount;
    await mkdir(mount, { recursive: true, mode: 0o711 });
    await this.refuseLinks(dir, image, mount);
    // The sandbox user (bubblewrap mounts as it) walks through to its bind: searchable, never listable.
    await chmod(dir, 0o711);
    await makeReachable(this.root, { self: true });
    const bytes = volume.sizeMiB * 1024 * 1024;
    const existing = await lstat(image).catch(() => null);
    if (!existing) {
      await exec('truncate', ['-s', String(bytes), image]);
      // -m 0: no blocks kept for root (the instance never is); root_owner: the top directory is the app's.
      await exec('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${ownerUid}:${ownerUid}`, image]);
    } else if (existing.size < bytes) {
      await this.released(image);
      await exec('truncate', ['-s', String(bytes), image]);
      // e2fsck's exit 1 is "errors corrected": the file system is sound and may grow; 2 and up are failures.
      await exec('e2fsck', ['-f', '-p', image]).catch((err: { code?: unknown }) => {
        if (err.code !== 1) throw err;
      });
      await exec('resize2fs', [image]);
    }
    await exec('mount', ['-o', 'loop,nosuid,nodev', image, mount]);
    return mount;
  }

  /**
   * As `ensure`, once no instance uses the disk (a stop-then-start deployment, between the stop
   * and the start): a disk smaller than its recorded size is unmounted and grown first.
   */
  async ensureIdle(volume: { id: string; sizeMiB: number }, ownerUid: number): Promise<string> {
    const mount = this.mountPoint(volume.id);
    if (await this.isMounted(mount)) {
      const image = await lstat(join(this.directory(volume.id), 'disk.img'));
      if (image.size < volume.sizeMiB * 1024 * 1024) await this.unmount(mount);
    }
    const mounted = await this.ensure(volume, ownerUid);
    await this.giveTo(mounted, ownerUid);
    return mounted;
  }

  /**
   * A volume re-attached to another application (its first went away) holds files of the first
   * one's user: they become the new one's, once, while no instance uses the disk (ensureIdle).
   * -P -h: no symbolic link is ever followed, each is changed itself; nothing of the tenant runs
   * meanwhile, and the tree is the volume's own file system.
   */
  private async giveTo(mount: string, uid: number) {
    if ((await lstat(mount)).uid === uid) return;
    await exec('chown', ['-R', '-P', '-h', `${uid}:${uid}`, mount]);
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

  /**
   * Waits until no loop device holds the disk: the host's unmount succeeds while a sandbox that bound the disk still
   * ends (its mount namespace keeps the file system active), and a disk is never checked or grown while active.
   */
  private async released(image: string) {
    for (let attempt = 1; ; attempt++) {
      const { stdout } = await exec('losetup', ['-j', image]);
      if (stdout.trim() === '') return;
      if (attempt >= 40) throw new Error(`the volume's disk ${image} is still in use: ${stdout.trim()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** The sandboxes that bound it end with their processes; their mounts may outlive the stop by a moment. */
  private async unmount(mount: string) {
    for (let attempt = 1; ; attempt++) {
      try {
        await exec('umount', [mount]);
        return;
      } catch (err) {
        if (attempt >= 20) throw new Error(`the volume at ${mount} is still in use: ${(err as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
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
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

function ignoreMissing(err: NodeJS.ErrnoException) {
  if (err.code !== 'ENOENT') throw err;
}
