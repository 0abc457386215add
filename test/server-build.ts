import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');

/** Every TypeScript source of src/, declarations aside. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/**
 * The server of this checkout, compiled once per test run for the tests that start it as a process
 * (`node <dir>/main.js`, as `npm start` runs dist/main.js). Under `node --import tsx src/main.ts`
 * each start compiled-loaded the sources through tsx's hooks (about twice the start of the built
 * server, and its separate edge process paid it again). esbuild transpiles file by file, as
 * scripts/build.mjs does with tsc (type checks are `npm run typecheck`'s job), into a directory
 * beside src/ so the paths the code finds from its own location (dashboard/dist, node_modules)
 * are the built server's.
 */
export async function buildServer(): Promise<{ dir: string; remove: () => void }> {
  const dir = mkdtempSync(join(ROOT, '.test-server-'));
  await build({
    entryPoints: sources(join(ROOT, 'src')),
    outdir: dir,
    outbase: join(ROOT, 'src'),
    bundle: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
  cpSync(join(ROOT, 'src/platform/db/migrations'), join(dir, 'platform/db/migrations'), { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
