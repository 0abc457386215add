#!/usr/bin/env node
// The `slipway` command (package.json "bin"). It runs the compiled client from dist/ (built
// by `npm install` / `npm run build`), or the TypeScript source through tsx when there is
// no build (a fresh checkout, development: SLIPWAY_CLI_SOURCE=1 forces it).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist/cli.js');

let main;
if (existsSync(compiled) && process.env.SLIPWAY_CLI_SOURCE !== '1') {
  main = await import(pathToFileURL(compiled).href);
} else {
  const { tsImport } = await import('tsx/esm/api');
  main = await tsImport(pathToFileURL(join(root, 'src/cli/main.ts')).href, import.meta.url);
}
process.exitCode = await main.run(process.argv.slice(2));
