import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readTextBeneath, statBeneath, UnsafePathError, type BeneathStat } from '../fs/beneath.js';
import { privateDir } from '../fs/private-dir.js';

/**
 * How a built artifact is laid out on disk. `<DATA_DIR>/images/<app>/<version>/` belongs to
 * the platform (root, 0711: a sandbox user can pass through it, never list or write it) and
 * holds:
 * - `slipway-artifact.json`, written by the platform: what the artifact is and, for an
 *   image, how to run it (WORKDIR, ENV, USER, ENTRYPOINT, CMD). Nothing the runtime trusts
 *   comes from a file the tenant can write.
 * - the tenant's tree: `app/` (a source build's prepared checkout, where its processes run)
 *   or `rootfs/` (a Dockerfile image's unpacked root file system), owner-only.
 */
export const ARTIFACT_MANIFEST = 'slipway-artifact.json';
export const SOURCE_TREE_DIR = 'app';
export const IMAGE_ROOTFS_DIR = 'rootfs';
/** The manifest name of artifacts stored before this layout, beside (or inside) the tenant's files. */
export const LEGACY_IMAGE_MANIFEST = 'slipway-image.json';

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
  /**
   * The port the image's web process listens on inside its sandbox (its `EXPOSE`, see
   * `exposedPort`): `PORT` is set to it and the host's port forwarded there. Absent: `PORT` is the host's.
   */
  port?: number;
}

export type ArtifactManifest = { layout: 2; kind: 'source' } | ({ layout: 2; kind: 'image' } & Omit<ImageArtifact, 'rootfs'>);

/** Where a release's processes run: a source tree (their working directory) or an image root. */
export type ResolvedArtifact = { kind: 'source'; dir: string } | { kind: 'image'; image: ImageArtifact };

/** An artifact the runtime will not run (its layout could have been forged by the tenant); the message says what to do. */
export class ArtifactRefused extends Error {}

const MAX_MANIFEST_BYTES = 1024 * 1024;
const REBUILD = 'build the application again and deploy the new image';

/** A fresh, empty artifact directory owned by the platform (its parents too: 0711). */
export async function prepareArtifactDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await privateDir(dirname(dir), 0o711);
  await mkdir(dir, { mode: 0o711 });
  await privateDir(dir, 0o711);
}

/** Writes the platform's manifest beside the tenant's tree (the directory is the platform's: nobody else can write there). */
export async function writeArtifactManifest(dir: string, manifest: ArtifactManifest): Promise<void> {
  await writeFile(join(dir, ARTIFACT_MANIFEST), JSON.stringify(manifest, null, 2), { mode: 0o600, flag: 'wx' });
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

function imageFields(m: Record<string, unknown>): Omit<ImageArtifact, 'rootfs'> {
  const env = m.env as Record<string, unknown> | undefined;
  if (
    typeof m.workdir !== 'string' ||
    !m.workdir.startsWith('/') ||
    env === null ||
    typeof env !== 'object' ||
    Array.isArray(env) ||
    !Object.values(env).every((v) => typeof v === 'string') ||
    !(m.user === null || (typeof m.user === 'string' && /^\d+(:\d+)?$/.test(m.user))) ||
    !isStringArray(m.entrypoint) ||
    !isStringArray(m.cmd)
  ) {
    throw new ArtifactRefused(`the image manifest of this artifact is malformed; ${REBUILD}`);
  }
  if (m.port !== undefined && !(Number.isInteger(m.port) && (m.port as number) >= 1024 && (m.port as number) <= 65535)) {
    throw new ArtifactRefused(`the image manifest of this artifact is malformed; ${REBUILD}`);
  }
  return {
    workdir: m.workdir,
    env: env as Record<string, string>,
    user: m.user,
    entrypoint: m.entrypoint,
    cmd: m.cmd,
    ...(m.port !== undefined ? { port: m.port as number } : {}),
  };
}

/**
 * The port of an image's `EXPOSE` its web process gets (PORT, and the forward into its
 * sandbox): the one TCP port exposed, or the lowest of several (a `slipway.port` label
 * chooses another). Ports below 1024 need a privilege the sandbox does not give: the process
 * then gets the host's PORT, and `note` says so.
 */
export function exposedPort(
  exposed: Record<string, unknown> | undefined,
  labels: Record<string, string> | undefined,
  note: (line: string) => void,
): number | undefined {
  const tcp = Object.keys(exposed ?? {})
    .map((p) => /^(\d{1,5})(?:\/tcp)?$/i.exec(p))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const labelled = labels?.['slipway.port'];
  const chosen = labelled !== undefined && /^\d{1,5}$/.test(labelled) ? Number(labelled) : tcp[0];
  if (chosen === undefined) return undefined;
  if (chosen < 1024 || chosen > 65535) {
    note(`EXPOSE ${chosen}: ports below 1024 cannot be opened in the sandbox; the web process gets $PORT instead`);
    return undefined;
  }
  note(`The web process listens on ${chosen} (${labelled !== undefined ? 'label slipway.port' : 'EXPOSE'}): PORT=${chosen}`);
  return chosen;
}

/**
 * What the runtime runs for an artifact path, decided only by what the platform wrote: the
 * manifest must be a regular file owned by the platform in a directory only the platform can
 * write, and the tenant's tree below it a real directory (no symlink; its parent is the
 * platform's, so it cannot be swapped afterwards). An artifact of the earlier layout is a
 * source tree as before (nothing of it is read), or an image under `legacyImage`'s rule.
 */
export async function resolveArtifact(artifactPath: string): Promise<ResolvedArtifact> {
  const top = await lstat(artifactPath).catch(() => null);
  if (!top?.isDirectory()) throw new ArtifactRefused(`the artifact ${artifactPath} is missing or not a directory; ${REBUILD}`);
  const platformUid = process.getuid?.() ?? 0;
  try {
    const manifest = await statBeneath(artifactPath, ARTIFACT_MANIFEST);
    if (!manifest) {
      const legacy = await statBeneath(artifactPath, LEGACY_IMAGE_MANIFEST);
      if (legacy) return await legacyImage(artifactPath, legacy, platformUid);
      return { kind: 'source', dir: artifactPath };
    }
    if (top.uid !== platformUid || (top.mode & 0o022) !== 0 || manifest.kind !== 'file' || manifest.uid !== platformUid) {
      throw new ArtifactRefused(`the artifact's manifest was not written by the platform; ${REBUILD}`);
    }
    const parsed = JSON.parse((await readTextBeneath(artifactPath, ARTIFACT_MANIFEST, MAX_MANIFEST_BYTES))!) as Record<string, unknown>;
    if (parsed.layout !== 2 || (parsed.kind !== 'image' && parsed.kind !== 'source')) {
      throw new ArtifactRefused(`the artifact's manifest is of an unknown layout; ${REBUILD}`);
    }
    const treeName = parsed.kind === 'image' ? IMAGE_ROOTFS_DIR : SOURCE_TREE_DIR;
    const tree = await statBeneath(artifactPath, treeName);
    if (tree?.kind !== 'directory') throw new ArtifactRefused(`the artifact's ${treeName}/ is missing or not a real directory; ${REBUILD}`);
    const dir = join(artifactPath, treeName);
    if (parsed.kind === 'source') return { kind: 'source', dir };
    return { kind: 'image', image: { ...imageFields(parsed), rootfs: dir } };
  } catch (err) {
    if (err instanceof UnsafePathError) throw new ArtifactRefused(`the artifact's ${err.message}; ${REBUILD}`);
    if (err instanceof SyntaxError) throw new ArtifactRefused(`the artifact's manifest is not valid JSON; ${REBUILD}`);
    throw err;
  }
}

/**
 * An image stored before this layout keeps running after an upgrade when its manifest can
 * only have come from the platform: a regular file owned by the platform's user (a sandbox
 * user can neither create one nor hard-link one, protected_hardlinks) beside a real `rootfs/`
 * directory. No tenant process can write an image artifact's directory after its build, so
 * nothing can be swapped between this check and the mount. Anything else is refused: a
 * source build could have planted it.
 */
async function legacyImage(artifactPath: string, manifest: BeneathStat, platformUid: number): Promise<ResolvedArtifact> {
  const rootfs = await statBeneath(artifactPath, IMAGE_ROOTFS_DIR);
  if (manifest.kind !== 'file' || manifest.uid !== platformUid || (manifest.mode & 0o022) !== 0 || rootfs?.kind !== 'directory') {
    throw new ArtifactRefused(
      `this release's artifact was stored by an earlier Slipway with an image manifest (${LEGACY_IMAGE_MANIFEST}) ` +
        `the platform did not write, so it is not run; ${REBUILD}`,
    );
  }
  const parsed = JSON.parse((await readTextBeneath(artifactPath, LEGACY_IMAGE_MANIFEST, MAX_MANIFEST_BYTES))!) as Record<string, unknown>;
  return { kind: 'image', image: { ...imageFields(parsed), rootfs: join(artifactPath, IMAGE_ROOTFS_DIR) } };
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
