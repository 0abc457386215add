import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the platform's own files are. From source (tsx: development, tests) this module is src/program-files.ts and
 * the files lie as in src/. Built (scripts/build-server.mjs), each program is one bundle at the top of dist/ with this
 * module's code inside it, so this location is dist/: one module, rather than each user of a file finding it from
 * its own location (which a bundle moves).
 */
const here = dirname(fileURLToPath(import.meta.url));
const fromSource = import.meta.url.endsWith('.ts');

export const programFiles = {
  /** The platform's entry point: the separate edge process runs it. */
  main: join(here, fromSource ? 'main.ts' : 'main.js'),
  /** An instance's shim (src/platform/runtime/local/instance-shim.ts); from source it is bundled before it runs. */
  instanceShim: join(here, fromSource ? 'platform/runtime/local/instance-shim.ts' : 'instance-shim.js'),
  /** The numbered SQL migrations (copied beside the bundles by the build). */
  migrations: join(here, fromSource ? 'platform/db/migrations' : 'migrations'),
  /** What `vite build` (npm run build / prepare) writes for the dashboard. */
  dashboard: join(here, '..', 'dashboard', 'dist'),
};
