import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * The `slipway` CLI of this checkout, bundled once per test run from src/cli/main.ts (the same
 * source bin/slipway.js loads through tsx with SLIPWAY_CLI_SOURCE=1). Starting the bundle costs
 * about a third of tsx's start (tsx compiles-loads ~50 modules through its hooks on every call:
 * ~1 s of CPU each, and the suite runs the CLI a few hundred times). Dependencies stay external,
 * resolved through a node_modules link beside the bundle, as the built dist/ resolves them.
 * Returns the program to run with node and a clean-up.
 */
export async function bundleCli(): Promise<{ program: string; remove: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-test-cli-'));
  await build({
    entryPoints: [join(ROOT, 'src/cli/main.ts')],
    outfile: join(dir, 'main.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // What bin/slipway.js does with the module it loads.
  const program = join(dir, 'slipway.mjs');
  writeFileSync(program, "const main = await import('./main.mjs');\nprocess.exitCode = await main.run(process.argv.slice(2));\n");
  return { program, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
