// Builds the server (`node dist/main.js` starts on its own: scripts/build-server.mjs); the dashboard is
// `npm run build:dashboard`. Type checks are `npm run typecheck`'s job. Usage: node scripts/build.mjs [outDir]
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import process from 'node:process';
import { buildServerPrograms } from './build-server.mjs';

const outDir = resolve(process.argv[2] ?? 'dist');
rmSync(outDir, { recursive: true, force: true });
await buildServerPrograms(outDir);
