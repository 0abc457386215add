// Compiles src/ to JavaScript and copies what the compiled code reads at run time (the SQL
// migrations), so `node dist/main.js` starts on its own. Usage: node scripts/build.mjs [outDir]
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import process from 'node:process';

const outDir = resolve(process.argv[2] ?? 'dist');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(outDir, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { stdio: 'inherit' });
cpSync('src/platform/db/migrations', join(outDir, 'platform/db/migrations'), { recursive: true });
