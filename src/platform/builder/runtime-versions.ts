import { access, constants, readdir } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import semver from 'semver';
import { run } from '../git/command.js';
import { BuildError } from './port.js';

/** One interpreter installed on this machine that a build may use. */
export interface Installation {
  version: string;
  /** The interpreter's own executable. */
  executable: string;
  /** Its `bin` folder (put first on PATH so `npm`/`npx` of the same installation are used). */
  binDir: string;
  /** The one a bare `node`/`python3` already finds on PATH (no PATH change needed). */
  onPath: boolean;
}

/** Folders a sandboxed build sees (read-only): an interpreter elsewhere could not run there. */
const SANDBOX_VISIBLE = ['/usr/', '/opt/'];

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

function pathDirs(): string[] {
  return (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter).filter((d) => d.startsWith('/'));
}

/** `<file> --version` of an interpreter, read once per path (a version never changes under a running server). */
const versions = new Map<string, Promise<string | null>>();
function versionOf(file: string, pattern: RegExp): Promise<string | null> {
  let version = versions.get(file);
  if (!version) {
    version = run(file, ['--version'], { timeoutMs: 10_000, maxStdoutBytes: 4096 })
      .then((r) => (r.code === 0 ? (pattern.exec(`${r.stdout}${r.stderr}`)?.[1] ?? null) : null))
      .catch(() => null);
    versions.set(file, version);
  }
  return version;
}

/**
 * What is really installed here, never downloaded: the first `<name>` on PATH, then each
 * `<folder>/<installation>/bin/<name>` of `folders`. With a sandbox only what it can see.
 */
async function discover(names: string[], folders: string[], pattern: RegExp, sandboxed: boolean): Promise<Installation[]> {
  const candidates: string[] = [];
  // A sandboxed build finds the first one it can see (e.g. /usr/bin/python3 past a pyenv shim in /root).
  const dirs = pathDirs().filter((d) => !sandboxed || SANDBOX_VISIBLE.some((p) => `${d}/`.startsWith(p)));
  for (const name of names) {
    for (const dir of dirs) {
      const file = join(dir, name);
      if (await executable(file)) {
        candidates.push(file);
        break;
      }
    }
  }
  const onPath = new Set(candidates);
  for (const folder of folders) {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!entry.isDirectory()) continue;
      for (const name of names) {
        const file = join(folder, entry.name, 'bin', name);
        if (await executable(file)) candidates.push(file);
      }
    }
  }
  const found: Installation[] = [];
  for (const file of candidates) {
    if (sandboxed && !SANDBOX_VISIBLE.some((p) => file.startsWith(p))) continue;
    const version = await versionOf(file, pattern);
    if (version && !found.some((f) => f.version === version))
      found.push({ version, executable: file, binDir: dirname(file), onPath: onPath.has(file) });
  }
  return found;
}

function listed(installations: Installation[]): string {
  return installations.length === 0 ? 'none' : installations.map((i) => `${i.version} (${i.executable})`).join(', ');
}

/** Every Node a source build may use here (`BUILD_NODE_DIRS` and PATH), as `slipway doctor` lists them. */
export function installedNodes(folders: string[], sandboxed: boolean): Promise<Installation[]> {
  return discover(['node'], folders, /v(\d+\.\d+\.\d+)/, sandboxed);
}

/**
 * The newest Node installed here that satisfies `engines.node`, or a build failure naming the
 * range, every version available and how to get another.
 */
export async function nodeFor(range: unknown, folders: string[], sandboxed: boolean): Promise<Installation> {
  if (typeof range !== 'string' || semver.validRange(range) === null) {
    throw new BuildError(`package.json: "engines.node" must be a version range such as ">=20" or "20.x" (got ${JSON.stringify(range)})`);
  }
  const installed = await installedNodes(folders, sandboxed);
  const best = semver.maxSatisfying(
    installed.map((i) => i.version),
    range,
  );
  const chosen = installed.find((i) => i.version === best);
  if (chosen) return chosen;
  if (installed.length === 0)
    throw new BuildError(
      `No Node is installed for builds on this machine: ask the administrator to install one (apt-get install nodejs, ` +
        `or a nodejs.org tarball unpacked as ${folders[0] ?? '/opt/node'}/<version>/bin/node, setting BUILD_NODE_DIRS)`,
    );
  throw new BuildError(
    `package.json asks for Node ${JSON.stringify(range)} ("engines.node") but this machine has Node ${listed(installed)}. ` +
      `Change "engines.node" to a range one of these satisfies, or ask the administrator to unpack a matching Node ` +
      `(https://nodejs.org/dist/) as ${folders[0] ?? '/opt/node'}/<version>/bin/node (setting BUILD_NODE_DIRS).`,
  );
}

/**
 * The Python a `.python-version` names ("3.11", "3.11.7": pyenv's prefix match), newest first,
 * among `python3` and `python3.N` on PATH; or a build failure listing what is installed.
 */
export async function pythonFor(requested: string, sandboxed: boolean): Promise<Installation> {
  const wanted = requested.trim().split(/\s+/)[0] ?? '';
  if (!/^\d+(\.\d+){0,2}$/.test(wanted)) {
    throw new BuildError(`.python-version: expected a version such as "3.11" or "3.11.7" (got ${JSON.stringify(wanted.slice(0, 40))})`);
  }
  const names = ['python3', ...Array.from({ length: 20 }, (_, i) => `python3.${20 - i}`)];
  const installed: Installation[] = [];
  // Each python3.N on PATH is its own installation (Debian's python3.11 beside python3.12).
  for (const name of names) installed.push(...(await discover([name], [], /Python (\d+\.\d+\.\d+)/, sandboxed)));
  const unique = installed.filter((i, n) => installed.findIndex((j) => j.version === i.version) === n);
  const matching = unique
    .filter((i) => i.version === wanted || i.version.startsWith(`${wanted}.`))
    .sort((a, b) => semver.rcompare(a.version, b.version));
  if (matching[0]) return matching[0];
  throw new BuildError(
    `.python-version asks for Python ${wanted} but this machine has Python ${listed(unique)}. ` +
      `Change .python-version to one of these, or ask the administrator to install python${wanted.split('.').slice(0, 2).join('.')} on the server.`,
  );
}
