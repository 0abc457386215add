import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Server } from 'node:net';
import type { EdgeSettings } from './edge-settings.js';
import { loadKeyring, SecretBox } from '../crypto/secret-box.js';
import { embeddedPlatformUrl } from '../db/embedded-urls.js';
import { Notifications } from '../db/notifications.js';
import { StartupError } from '../startup-error.js';
import { askEdge, controlSocketPath, PID_FILE, serveControl, type EdgeStatus } from './edge-control.js';
import { createEdgeDb } from './edge-database.js';
import { EdgeDirectory } from './edge-directory.js';
import type { EdgeDriver, EdgeRequestLogger } from './edge-driver.js';
import { EdgeNode } from './edge-routes.js';
import { createEdgeDriver } from './create-edge-driver.js';
import { RequestStats } from './request-stats.js';
import { edgeDirectory, readRouteSnapshot, routesOf, seedTable, writeRouteSnapshot } from './route-snapshot.js';

/** First and longest wait between attempts to reach the database. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;
/** How often the edge checks that DATA_DIR/edge/edge.pid still names it. */
const WATCHDOG_MS = 5000;
/** A database that stays down is reported once per this interval (with how many failures were not), not every second. */
const DATABASE_WARNING_MS = 30_000;

export interface EdgeProcess {
  driver: EdgeDriver;
  close(): Promise<void>;
}

/**
 * A process in the `edge` role: serves applications from the route table it last received
 * (DATA_DIR/edge/routes.json) from its first moment, whether or not PostgreSQL answers, then
 * follows the routes the workers publish there (LISTEN/NOTIFY and a poll), trying again with
 * backoff while the database is unreachable, and writes every table it loads back to disk.
 * One edge per data directory: a control socket answers `status` (so a control plane adopts
 * it instead of starting another) and `stop`.
 */
export async function runEdgeProcess(config: EdgeSettings, logger: EdgeRequestLogger, onStopRequested: () => void): Promise<EdgeProcess> {
  const dir = edgeDirectory(config.dataDir);
  const socketPath = controlSocketPath(dir);
  const running = await askEdge(socketPath, 'status').catch(() => null);
  if (running) throw new StartupError(`an edge process (pid ${running.pid}) already serves ${config.dataDir} on port ${running.port}`);

  const databaseUrl = config.DATABASE_URL ?? embeddedPlatformUrl(config.dataDir, config.EMBEDDED_PG_PORT);
  if (!databaseUrl)
    throw new StartupError(`the edge role needs DATABASE_URL, or the embedded PostgreSQL of ${config.dataDir} set up by a first start`);
  const db = createEdgeDb(databaseUrl);
  const secrets = new SecretBox(loadKeyring(config.dataDir, config.SECRET_KEY, config.SECRET_KEY_PREVIOUS));

  const driver = await createEdgeDriver(config);
  const directory = new EdgeDirectory(db, secrets, 2000, true);
  const snapshot = await readRouteSnapshot(dir);
  if (snapshot) {
    seedTable(driver.table, snapshot.routes);
    directory.seed(snapshot);
  }
  driver.useDirectory(directory);
  driver.useStats(new RequestStats(db, config.REQUEST_STATS_FLUSH_MS));
  driver.useLogger(logger);

  // Written when what the edge serves changed (every load would otherwise rewrite and flush it every few seconds).
  let persisted = '';
  const persist = () => {
    try {
      const current = { routes: routesOf(driver.table), ...directory.exportForSnapshot() };
      const text = JSON.stringify(current);
      if (text === persisted) return;
      writeRouteSnapshot(dir, current);
      persisted = text;
    } catch (err) {
      logger.warn({ err }, 'could not write the edge route snapshot; serving goes on');
    }
  };
  directory.onChange(persist);
  const databaseWarning = throttled(logger, DATABASE_WARNING_MS);
  const notifications = new Notifications(databaseUrl, (err) => databaseWarning(err, 'edge notification connection lost'));
  const node = new EdgeNode(db, driver, notifications, {
    drainTimeoutMs: config.ROUTER_DRAIN_TIMEOUT_MS,
    onError: (err) => databaseWarning(err, 'edge route sync failed; serving the routes it has'),
    onSynced: persist,
  });

  await driver.listen();
  if (snapshot) await driver.apply();
  logger.warn(
    { routes: snapshot?.routes.length ?? 0, port: driver.port },
    snapshot ? 'edge serving the persisted route table' : 'edge serving (no persisted route table yet)',
  );

  let stopped = false;
  let retry: NodeJS.Timeout | null = null;
  const connect = (delay: number) => {
    node.start().catch((err) => {
      if (stopped) return;
      databaseWarning(err, 'edge cannot reach its database; serving the routes it has');
      retry = setTimeout(() => connect(Math.min(delay * 2, RETRY_MAX_MS)), delay);
      retry.unref();
    });
  };
  connect(RETRY_FIRST_MS);

  const status = (): EdgeStatus => ({ pid: process.pid, driver: driver.name, port: driver.port, httpsPort: driver.httpsPort });
  let control: Server;
  try {
    control = await serveControl(socketPath, status, onStopRequested);
  } catch (err) {
    stopped = true;
    await driver.close();
    throw err;
  }
  const pidFile = join(dir, PID_FILE);
  writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  // Another edge took over this data directory, or the directory is gone: this one has no place to serve from.
  const watchdog = setInterval(() => {
    if (!namesThisProcess(pidFile)) {
      logger.warn({ pidFile }, 'the edge pid file no longer names this process; stopping');
      onStopRequested();
    }
  }, WATCHDOG_MS);
  watchdog.unref();

  return {
    driver,
    async close() {
      stopped = true;
      clearInterval(watchdog);
      if (retry) clearTimeout(retry);
      await new Promise<void>((resolve) => control.close(() => resolve()));
      if (namesThisProcess(pidFile)) rmSync(pidFile, { force: true });
      await node.stop();
      await notifications.close();
      await driver.close();
      await db.destroy().catch(() => {}); // shutdown: the database may be gone already
    },
  };
}

/** A warning written at most once per `intervalMs`, saying how many were left out meanwhile. */
function throttled(logger: EdgeRequestLogger, intervalMs: number): (err: unknown, message: string) => void {
  let last = 0;
  let skipped = 0;
  return (err, message) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      skipped++;
      return;
    }
    logger.warn({ err, skipped }, message);
    last = now;
    skipped = 0;
  };
}

function namesThisProcess(pidFile: string): boolean {
  try {
    return Number(readFileSync(pidFile, 'utf8').trim()) === process.pid;
  } catch {
    return false;
  }
}
