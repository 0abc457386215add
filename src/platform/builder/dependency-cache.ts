import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readFileBeneath, UnsafePathError } from '../fs/beneath.js';

/**
 * The installed dependencies of a source build (`node_modules`, a Python virtualenv), kept in
 * the build's cache scope (per application and environment) and reused while what decides
 * them has not changed: the lockfile, the interpreter, the install command and the build-time
 * variables. One entry per scope (the last install): bounded by what the application installs,
 * and counted with the scope's other caches in the organization's disk use.
 *
 * The platform never reads, copies or removes anything in it: the cache is written by the
 * build's own sandboxed process, and restored and saved by shell commands running there too.
 * Only the key is computed here, from files of the checkout read without following links.
 */

/** Lockfiles are read by the platform (as root) to hash them: bounded. Larger ones are installed every time. */
const MAX_LOCKFILE_BYTES = 64 * 1024 * 1024;
/** The directory of the scope's cache holding the saved dependencies. */
export const DEPENDENCY_CACHE_DIR = 'deps';

export interface DependencyCache {
  /** sha256 hex of everything that decides the installed tree. */
  key: string;
  /** The lockfile(s) the key was taken from, for the build log. */
  lockfiles: string[];
  /** The directory of the build tree the install produces (`node_modules`, `.venv`). */
  tree: string;
}

export interface DependencyInputs {
  /** Files of the checkout that decide the install, in order; the ones present are hashed (at least one lockfile must be). */
  lockfiles: string[];
  /** Further files hashed when present (`.npmrc`, `pip.conf`), never required. */
  settings?: string[];
  /** Anything else that changes the result: interpreter version, install command, the manifest's install-relevant fields. */
  facts: unknown[];
  buildEnv: Record<string, string>;
  tree: string;
}

/** The cache key of a checkout's dependencies, or null (with why) when it has no lockfile to key on. */
export async function dependencyCacheFor(dir: string, inputs: DependencyInputs): Promise<DependencyCache | { none: string }> {
  const hash = createHash('sha256');
  const found: string[] = [];
  for (const [kind, names] of [
    ['lockfile', inputs.lockfiles],
    ['setting', inputs.settings ?? []],
  ] as const) {
    for (const name of names) {
      let content: Buffer | null;
      try {
        content = await readFileBeneath(dir, name, MAX_LOCKFILE_BYTES);
      } catch (err) {
        if (err instanceof UnsafePathError) return { none: `${name} is not a regular file of at most 64 MiB` };
        throw err;
      }
      if (content === null) continue;
      if (kind === 'lockfile') found.push(name);
      hash.update(`${kind} ${name} ${content.length}\n`).update(content);
    }
  }
  if (found.length === 0) return { none: `no ${inputs.lockfiles.join(' or ')}` };
  // Build-time variables can change what an install does (registries, install scripts): any change re-installs.
  const env = Object.keys(inputs.buildEnv)
    .sort()
    .map((name) => [name, inputs.buildEnv[name]]);
  hash.update(JSON.stringify({ facts: inputs.facts, env, tree: inputs.tree }));
  return { key: hash.digest('hex'), lockfiles: found, tree: inputs.tree };
}

/**
 * Restores the saved tree into the build tree when its key matches; exits 3 when there is
 * nothing to reuse (no entry, another key, a damaged entry), which means "install".
 * Run in the build's sandbox with the build tree as its working directory. A virtualenv
 * names its own absolute path in its scripts: the path it was saved from is replaced by this one.
 */
export function restoreCommand(cacheDir: string, cache: DependencyCache, buildDir: string): string {
  const saved = join(cacheDir, DEPENDENCY_CACHE_DIR);
  const tree = q(cache.tree);
  return [
    `saved=${q(saved)}`,
    `[ -f "$saved/key" ] && [ "$(cat "$saved/key")" = ${q(cache.key)} ] && [ -d "$saved/tree" ] && [ -f "$saved/from" ] || exit 3`,
    `rm -rf ./${tree}`,
    `cp -a "$saved/tree" ./${tree} || { rm -rf ./${tree}; exit 3; }`,
    `from=$(cat "$saved/from")`,
    `here=${q(join(buildDir, cache.tree))}`,
    // Only text files directly in bin/ (grep skips the interpreter's symlinks): scripts' shebangs and activate.
    `if [ "$from" != "$here" ] && [ -d ./${tree}/bin ]; then`,
    `  grep -rlIF -- "$from" ./${tree}/bin ./${tree}/pyvenv.cfg 2>/dev/null | while IFS= read -r f; do`,
    `    sed -i "s|$from|$here|g" "$f" || exit 3`,
    '  done || { rm -rf ./' + tree + '; exit 3; }',
    'fi',
  ].join('\n');
}

/**
 * Saves the freshly installed tree as the scope's one entry: copied beside the old entry,
 * its key written last, then swapped in, so an interrupted save leaves no entry that matches.
 */
export function saveCommand(cacheDir: string, cache: DependencyCache, buildDir: string): string {
  const saved = join(cacheDir, DEPENDENCY_CACHE_DIR);
  const tree = q(cache.tree);
  return [
    'set -e',
    `saved=${q(saved)}`,
    `[ -d ./${tree} ] || mkdir ./${tree}`,
    'rm -rf "$saved.new" "$saved.old"',
    'mkdir -p "$saved.new"',
    `cp -a ./${tree} "$saved.new/tree"`,
    `printf %s ${q(join(buildDir, cache.tree))} > "$saved.new/from"`,
    `printf %s ${q(cache.key)} > "$saved.new/key"`,
    '[ ! -e "$saved" ] || mv "$saved" "$saved.old"',
    'mv "$saved.new" "$saved"',
    'rm -rf "$saved.old"',
  ].join('\n');
}

function q(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}
