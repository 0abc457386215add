// CI: fails when an installed package declares an `engines.node` range that excludes the Node
// running this script (the platform supports Node 20: a dependency that needs 22 must be pinned
// or overridden in package.json). Usage: node scripts/check-engines.mjs [node_modules directory]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import process from 'node:process';

// semver comes with fastify (and npm itself reads engines ranges with it).
const semver = createRequire(import.meta.url)('semver');

const root = resolve(process.argv[2] ?? 'node_modules');

/** Every package directory under a node_modules directory, nested ones included. */
function* packages(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || !(entry.isDirectory() || entry.isSymbolicLink())) continue;
    const path = join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      yield* packages(path);
      continue;
    }
    if (existsSync(join(path, 'package.json'))) yield path;
    if (existsSync(join(path, 'node_modules'))) yield* packages(join(path, 'node_modules'));
  }
}

const refused = [];
for (const dir of packages(root)) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  } catch {
    continue; // not a package manifest (a fixture or a partial file inside a package)
  }
  const range = manifest.engines?.node;
  if (typeof range !== 'string' || !semver.validRange(range)) continue;
  if (!semver.satisfies(process.version, range, { includePrerelease: true }))
    refused.push(`${relative(root, dir)}@${manifest.version}: engines.node "${range}"`);
}

if (refused.length > 0) {
  process.stderr.write(`Installed packages that do not support Node ${process.version}:\n  ${refused.join('\n  ')}\n`);
  process.stderr.write('Pin a version that supports it (package.json, or "overrides" for a dependency of a dependency).\n');
  process.exit(1);
}
process.stdout.write(`every installed package supports Node ${process.version}\n`);
