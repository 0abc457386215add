/**
 * Module boundaries (checked in CI by `npm run lint:deps`):
 * - no dependency cycle among src/modules and src/pipeline;
 * - a module uses another module only through that module's index.ts, and the pipeline only
 *   through src/pipeline/index.ts;
 * - src/pipeline (build → release → deploy) uses src/platform and the modules below it, through
 *   their index.ts, never a module's HTTP routes or schemas;
 * - src/platform (infrastructure) never depends on src/modules or src/pipeline;
 * - src/adapters (the Ancla-shaped routes) are HTTP only, over modules' and the pipeline's index.ts,
 *   never the database; nothing but the composition root depends on them;
 * - the `slipway` CLI (src/cli/) uses no server code (it talks to the REST API).
 * Tests are not cruised: they may reach into a module's files.
 * No violation is baselined: any one fails CI. The layering, bottom to top, is in
 * src/modules/README.md and docs/architecture.md.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
/** Kubernetes files with no value import of the client (directly or through another file). */
const CLIENT_FREE_KUBERNETES_FILES =
  '^src/platform/runtime/kubernetes/(addon-backups|addon-manifests|addon-sql|manifests|names|pod-exec)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'kubernetes-client-only-when-chosen',
      severity: 'error',
      comment:
        'The Kubernetes client weighs ~65 MiB of memory: outside src/platform/runtime/kubernetes/ import its modules as types or with import() where RUNTIME=kubernetes is chosen.',
      from: { pathNot: '^src/platform/runtime/kubernetes/' },
      to: {
        path: ['^src/platform/runtime/kubernetes/', '@kubernetes/client-node'],
        pathNot: CLIENT_FREE_KUBERNETES_FILES,
        dependencyTypesNot: ['type-only', 'dynamic-import'],
      },
    },
    {
      name: 'client-free-kubernetes-files-stay-free',
      severity: 'error',
      comment:
        'These Kubernetes files are imported at start by the add-ons module (manifests, backup helpers): they may not load the client.',
      from: { path: CLIENT_FREE_KUBERNETES_FILES },
      to: {
        path: ['^src/platform/runtime/kubernetes/', '@kubernetes/client-node'],
        pathNot: CLIENT_FREE_KUBERNETES_FILES,
        dependencyTypesNot: ['type-only', 'dynamic-import'],
      },
    },
    {
      name: 'edge-drivers-only-when-chosen',
      severity: 'error',
      comment:
        "A process holds the one edge driver EDGE_DRIVER chooses (create-edge-driver.ts imports it with import()): the built-in router's HTTP client, Caddy's name server and the rest stay out of the control plane and of other drivers' edges. The barrel src/platform/edge/index.ts loads them all: tests only.",
      from: { path: '^src/', pathNot: ['^src/platform/edge/(caddy|nginx|haproxy)-driver\\.ts$', '^src/platform/edge/index\\.ts$'] },
      to: {
        path: '^src/platform/edge/((caddy|nginx|haproxy)-driver|router-server|upstream-name-server|caddy-admin|index)\\.ts$',
        dependencyTypesNot: ['type-only', 'dynamic-import'],
      },
    },
    {
      name: 'edge-process-without-typebox',
      severity: 'error',
      comment:
        "An edge process spawned by a control plane takes the settings that process validated (edge-settings.ts) and never loads config.ts, whose schema is TypeBox's (a fifth of the edge's memory at rest): the edge's modules and src/main.ts import it as types, or with import() where the configuration is validated.",
      from: { path: ['^src/platform/edge/', '^src/main\\.ts$', '^src/find-binary\\.ts$', '^src/config-error\\.ts$'] },
      to: { path: ['^src/config\\.ts$', 'node_modules/typebox/'], dependencyTypesNot: ['type-only', 'dynamic-import'] },
    },
    {
      name: 'heavy-clients-only-when-used',
      severity: 'error',
      comment:
        'openid-client loads with the first SSO sign-in, jose with the first JWT signed (a registry token, a GitHub App call), undici (src/platform/http/load-undici.ts) with the first listen of a built-in router that proxies through it, the Caddy driver, or a doctor run: none is held by a control plane at rest.',
      from: { pathNot: ['^src/platform/edge/(caddy-driver|caddy-admin)\\.ts$', '^src/platform/http/load-undici\\.ts$'] },
      to: {
        path: ['node_modules/openid-client/', 'node_modules/jose/', 'node_modules/undici/'],
        dependencyTypesNot: ['type-only', 'dynamic-import'],
      },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      comment: 'Modules and the pipeline form a DAG: invert a dependency with a port/callback owned by the lower one.',
      from: { path: '^src/(modules|pipeline|adapters)/' },
      to: { path: '^src/(modules|pipeline|adapters)/', circular: true },
    },
    {
      name: 'module-through-index',
      severity: 'error',
      comment: "Another module's files are private: import its index.ts.",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/([^/]+)/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'pipeline-through-index',
      severity: 'error',
      comment: "The pipeline's files are private to it: import src/pipeline/index.ts.",
      from: { pathNot: '^src/pipeline/' },
      to: { path: '^src/pipeline/', pathNot: '^src/pipeline/index\\.ts$' },
    },
    {
      name: 'pipeline-uses-modules-through-index',
      severity: 'error',
      comment: 'The pipeline uses a module below it through its index.ts, like another module would.',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/modules/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'pipeline-not-on-http',
      severity: 'error',
      comment: 'The pipeline is below the HTTP edge: routes and schemas of a module serve the pipeline, never the reverse.',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/modules/[^/]+/[^/]+\\.(routes|schemas)\\.ts$' },
    },
    {
      name: 'adapter-through-index',
      severity: 'error',
      comment: "An adapter maps HTTP onto modules' services: it imports a module's index.ts, never its files.",
      from: { path: '^src/adapters/' },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'adapter-without-database',
      severity: 'error',
      comment: 'An adapter only maps: it reads and writes through the services, never the database.',
      from: { path: '^src/adapters/' },
      to: { path: '^src/platform/db/' },
    },
    {
      name: 'nothing-below-on-adapters',
      severity: 'error',
      comment: 'Adapters are the outermost HTTP edge: platform, modules, the pipeline and the CLIs never import them.',
      from: { path: '^src/(platform|modules|pipeline|cli|admin)/' },
      to: { path: '^src/adapters/' },
    },
    {
      name: 'root-through-index',
      severity: 'error',
      comment: 'The composition root and entry points use a module (or an adapter) through its index.ts.',
      from: { path: ['^src/[^/]+\\.ts$', '^src/admin/'] },
      to: { path: '^src/(modules|adapters)/[^/]+/', pathNot: '^src/(modules|adapters)/[^/]+/index\\.ts$' },
    },
    {
      name: 'cli-over-the-api',
      severity: 'error',
      comment:
        'The `slipway` CLI runs on any machine and talks to the REST API only (the admin tool in src/admin/ is the one on the database).',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: ['^src/cli/', '^src/modules/configurations/dotenv-import\\.ts$'] },
    },
    {
      name: 'platform-not-on-modules',
      severity: 'error',
      comment: 'Infrastructure must not depend on features: move the shared need into src/platform.',
      from: { path: '^src/platform/' },
      to: { path: '^src/(modules|pipeline)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
