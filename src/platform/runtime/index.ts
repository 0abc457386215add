import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { Db } from '../db/database.js';
import { RouterServer } from '../router/router-server.js';
import { LocalProcessDriver } from './local/local-driver.js';
import { ImageRootDriver } from './image-root/image-root-driver.js';
import { RuntimeService } from './runtime.service.js';

export type { RuntimeDriver, InstanceSpec, InstanceStatus } from './port.js';
export { RuntimeService } from './runtime.service.js';

/**
 * The runtime of a worker process: the local process driver (the only driver so far) and
 * the router on ROUTER_HOST:ROUTER_PORT. Call `start()` before the job workers run.
 */
export function createRuntime(config: Config, db: Db): RuntimeService {
  const driver = new LocalProcessDriver({
    logDir: join(config.dataDir, 'runtime', 'logs'),
    restartBackoffMs: config.RUNTIME_RESTART_BACKOFF_MS,
    stopGraceMs: config.RUNTIME_STOP_GRACE_MS,
  });
  const router = new RouterServer({ host: config.ROUTER_HOST, port: config.ROUTER_PORT });
  // Container image builds run inside their unpacked root file system; source builds pass through.
  return new RuntimeService(db, new ImageRootDriver(driver), router, { drainTimeoutMs: config.ROUTER_DRAIN_TIMEOUT_MS });
}
