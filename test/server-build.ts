import { mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildServerPrograms } from '../scripts/build-server.mjs';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * The server of this checkout, built once per test run for the tests that start it as a process, exactly as
 * `npm run build` builds dist/ (scripts/build-server.mjs: one bundle per program), so those tests run what
 * `npm start` runs. The directory is beside src/ so the paths the programs find from their own location
 * (dashboard/dist, node_modules) are the built server's.
 */
export async function buildServer(): Promise<{ dir: string; remove: () => void }> {
  const dir = mkdtempSync(join(ROOT, '.test-server-'));
  await buildServerPrograms(dir);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
