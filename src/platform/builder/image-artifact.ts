import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How a container image build's artifact is laid out on disk: the image's unpacked root
 * file system in `rootfs/`, and what running it needs from the image config in
 * `slipway-image.json`. The buildah builder writes it; the runtime's image-root driver
 * reads it to run processes inside the root file system (`chroot`).
 */
export const IMAGE_ARTIFACT_FILE = 'slipway-image.json';
export const IMAGE_ROOTFS_DIR = 'rootfs';

export interface ImageArtifact {
  /** Absolute path of the unpacked root file system. */
  rootfs: string;
  /** The image's working directory (`/` when unset). */
  workdir: string;
  /** The image's `ENV`, applied below the release's configuration. */
  env: Record<string, string>;
  /** The image's `USER` as `uid:gid` (names resolved at build time, see image-user.ts); null runs as root. */
  user: string | null;
  entrypoint: string[];
  cmd: string[];
}

export function readImageArtifact(artifactPath: string): ImageArtifact | null {
  const file = join(artifactPath, IMAGE_ARTIFACT_FILE);
  if (!existsSync(file)) return null;
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Omit<ImageArtifact, 'rootfs'>;
  return { ...stored, rootfs: join(artifactPath, IMAGE_ROOTFS_DIR) };
}

/** Quotes one argument for `sh` (single quotes; an embedded quote closes, escapes, reopens). */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** ENTRYPOINT + CMD as one shell command line, the way a container engine would run them. */
export function imageCommandLine(entrypoint: string[], cmd: string[]): string | null {
  const argv = [...entrypoint, ...cmd];
  if (argv.length === 0) return null;
  // Shell form (`CMD x $PORT`) arrives as ["/bin/sh", "-c", "x $PORT"]: keep the script as is.
  if (argv.length === 3 && /^(\/bin\/)?sh$/.test(argv[0]!) && argv[1] === '-c') return argv[2]!;
  return argv.map(shellQuote).join(' ');
}
