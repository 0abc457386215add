import { VolumeDisks } from '../volumes/index.js';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { Db } from '../db/database.js';
import type { EdgeDriver } from '../edge/edge-driver.js';
import { createEdgeDriver } from '../edge/create-edge-driver.js';
import { EdgeRoutes } from '../edge/edge-routes.js';
import { RequestStats } from '../edge/request-stats.js';
import { retireSeparateEdge, SeparateEdge } from '../edge/separate-edge.js';
import type { ApplicationRuntime } from './application-runtime.js';
import { LocalProcessDriver } from './local/local-driver.js';
import { LocalRuntime } from './local/local-runtime.js';
import { ImageRootDriver } from './image-root/image-root-driver.js';
import { RuntimeService } from './runtime.service.js';
import { pullSecretFor } from '../builder/registry-target.js';
import { createSandbox } from '../sandbox/index.js';
import { attachedAddonPorts } from '../addons/attached.js';

export type { ApplicationRuntime, WorkloadPlan } from './application-runtime.js';
export type { RuntimeDriver, InstanceSpec, InstanceStatus, ExecProcess, ExecRequest } from './port.js';
export { ExecRefused } from './local/instance-exec.js';
export { RuntimeService } from './runtime.service.js';
export { LocalRuntime } from './local/local-runtime.js';

/**
 * The runtime of a worker process, chosen by RUNTIME: `local` runs processes here behind
 * the router on ROUTER_HOST:ROUTER_PORT; `kubernetes` runs them on a cluster, pulling
 * images with credentials from the platform's own registry token service.
 * Call `start()` before the job workers run.
 */
export async function createRuntime(config: Config, db: Db, databaseUrl?: string): Promise<ApplicationRuntime> {
  if (config.RUNTIME === 'kubernetes') {
    // Loaded only for clusters: the Kubernetes client alone weighs ~65 MiB of a local platform's memory.
    const { createKubernetesRuntime } = await import('./kubernetes/kubernetes-runtime.js');
    return createKubernetesRuntime(config, pullSecretFor(config));
  }
  return createLocalRuntime(config, db, databaseUrl);
}

/**
 * The `all` role's edge: a process of its own that outlives this one (EDGE_PROCESS=separate, the default of the
 * built-in edge and Caddy), or the driver in this process (EDGE_PROCESS=in-process, the default of HAProxy and nginx,
 * whose daemon outlives this process by itself). Other roles (a `worker` beside edge-role processes) and embedders
 * without a database URL (the test harness) serve from this process.
 */
async function runtimeEdge(config: Config, databaseUrl: string | undefined): Promise<EdgeDriver> {
  if (config.EDGE_PROCESS === 'separate' && config.SLIPWAY_ROLE === 'all' && databaseUrl) return new SeparateEdge(config, databaseUrl);
  return createEdgeDriver(config);
}

/**
 * What an edge in this process does just before it listens: the `all` role stops an edge process an earlier start
 * left serving this data directory (it holds the ports), and a proxy daemon's driver (which may adopt the daemon
 * serving every route of the previous process) starts from the routes that process published.
 */
function takeOver(config: Config, db: Db, router: EdgeDriver): (() => Promise<void>) | undefined {
  if (router instanceof SeparateEdge) return undefined;
  return async () => {
    if (config.SLIPWAY_ROLE === 'all') await retireSeparateEdge(config.dataDir);
    if (router.name === 'haproxy' || router.name === 'nginx') await new EdgeRoutes(db).seed(router.table);
  };
}

export async function createLocalRuntime(config: Config, db: Db, databaseUrl?: string): Promise<LocalRuntime> {
  const sandbox = createSandbox(config, db);
  const driver = new LocalProcessDriver({
    sandbox,
    logDir: join(config.dataDir, 'runtime', 'logs'),
    // The files are a local copy of what the database keeps: never more than 8 MiB (or the app log limit) each, plus one rotated file.
    maxLogFileBytes: Math.min(8 * 1024 * 1024, config.APP_LOG_MAX_BYTES_PER_APP),
    restartBackoffMs: config.RUNTIME_RESTART_BACKOFF_MS,
    stopGraceMs: config.RUNTIME_STOP_GRACE_MS,
    outputRate: { linesPerSecond: config.APP_LOG_LINES_PER_SECOND, bytesPerSecond: config.APP_LOG_BYTES_PER_SECOND },
    addonPorts: (applicationId, environmentId) => attachedAddonPorts(db, applicationId, environmentId),
  });
  const router = await runtimeEdge(config, databaseUrl);
  router.useStats(new RequestStats(db, config.REQUEST_STATS_FLUSH_MS));
  // Container image builds run inside their unpacked root file system; source builds pass through.
  return new LocalRuntime(
    new RuntimeService(db, new ImageRootDriver(driver), router, {
      drainTimeoutMs: config.ROUTER_DRAIN_TIMEOUT_MS,
      beforeListen: takeOver(config, db, router),
    }),
    sandbox,
    sandbox ? new VolumeDisks(join(config.dataDir, 'volumes')) : null,
  );
}
