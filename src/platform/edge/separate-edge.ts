import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import { programFiles } from '../../program-files.js';
import { StartupError } from '../startup-error.js';
import { askEdge, controlSocketPath, START_LOG_FILE, type EdgeStatus } from './edge-control.js';
import type { EdgeDriver } from './edge-driver.js';
import { RouteTable } from './route-table.js';
import { edgeDirectory } from './route-snapshot.js';
import { EDGE_SETTINGS_ENV, edgeSettingsOf } from './edge-settings.js';

/** The platform's entry point (src/main.ts, or dist/main.js once built), whatever program started this process (a test's, say). */
const MAIN_PROGRAM = programFiles.main;

/** Longest wait for a spawned edge to answer on its control socket, and for a stopped one to go. */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
/** How often the control plane checks that its edge still answers (and starts it again when it does not). */
const WATCH_MS = 1000;
const RESTART_BACKOFF_MAX_MS = 30_000;
/** The tail of the spawned edge's standard error shown when it fails to start. */
const START_LOG_TAIL_BYTES = 4096;

/**
 * The control plane's side of an edge process of its own (EDGE_PROCESS=separate, the `all`
 * role's default): `listen()` adopts the edge already serving this data directory (it answers
 * on DATA_DIR/edge/control.sock) or spawns one, detached in a session of its own with no pipe
 * to this process, so a crash, `kill -9` or upgrade of the control plane leaves applications
 * served. Routes reach it through PostgreSQL like any edge process's (the runtime publishes
 * every change and waits until every live edge has drained it); this table is the runtime's
 * desired state, and requests never pass through this process.
 */
export class SeparateEdge implements EdgeDriver {
  readonly table = new RouteTable();
  readonly name: 'builtin' | 'caddy' | 'nginx' | 'haproxy';
  private status: EdgeStatus | null = null;
  private keepServingOnClose = false;
  private watch: NodeJS.Timeout | null = null;
  /** The restart under way, if any (a close waits for it, so no edge starts after it). */
  private restarting: Promise<void> | null = null;
  /** Failed restarts in a row: each waits twice as long before the next (at most RESTART_BACKOFF_MAX_MS). */
  private failedRestarts = 0;
  private nextRestartAt = 0;
  private closing = false;
  private readonly socketPath: string;
  private readonly dir: string;

  constructor(
    private readonly config: Config,
    private readonly databaseUrl: string,
    private readonly notice: (line: string) => void = (line) => console.error(`[slipway] ${line}`),
  ) {
    this.name = config.EDGE_DRIVER;
    this.dir = edgeDirectory(config.dataDir);
    this.socketPath = controlSocketPath(this.dir);
  }

  get listening(): boolean {
    return this.status !== null;
  }

  get port(): number {
    if (!this.status) throw new Error('edge not running');
    return this.status.port;
  }

  get httpsPort(): number | null {
    return this.status?.httpsPort ?? null;
  }

  /** The edge process's pid (adopted or spawned), or null before `listen()`. */
  get pid(): number | null {
    return this.status?.pid ?? null;
  }

  // The edge process reads custom domains and certificates, and counts requests, itself.
  useDirectory() {}
  useStats() {}
  useLogger() {}

  async listen(): Promise<number> {
    const running = await askEdge(this.socketPath, 'status').catch(() => null);
    if (running && this.sameListeners(running)) {
      this.status = running;
      this.notice(`adopted the running edge process (pid ${running.pid}, port ${running.port})`);
      this.supervise();
      return running.port;
    }
    if (running) {
      // Its ports or driver are not the configured ones any more: the operator changed them, so it is replaced.
      this.notice(`replacing the edge process (pid ${running.pid}, ${running.driver} on port ${running.port}): the settings changed`);
      await this.stopEdge();
    }
    this.status = await this.spawnEdge();
    this.notice(`started the edge process (pid ${this.status.pid}, port ${this.status.port})`);
    this.supervise();
    return this.status.port;
  }

  /** An edge that died (killed, crashed) is started again; it serves its persisted routes at once. */
  private supervise() {
    this.watch ??= setInterval(() => {
      if (this.restarting || this.closing || Date.now() < this.nextRestartAt) return;
      this.restarting = (async () => {
        if (await askEdge(this.socketPath, 'status', 2000).catch(() => null)) return;
        if (this.closing) return;
        this.notice(`the edge process (pid ${this.status?.pid}) stopped answering; starting it again`);
        this.status = await this.spawnEdge();
        this.failedRestarts = 0;
        this.notice(`started the edge process (pid ${this.status.pid}, port ${this.status.port})`);
      })()
        .catch((err) => {
          this.failedRestarts++;
          this.nextRestartAt = Date.now() + Math.min(WATCH_MS * 2 ** this.failedRestarts, RESTART_BACKOFF_MAX_MS);
          this.notice(`starting the edge process again failed: ${(err as Error).message}`);
        })
        .finally(() => {
          this.restarting = null;
        });
    }, WATCH_MS);
    this.watch.unref();
  }

  /** The runtime publishes routes to PostgreSQL; the edge process follows them from there. */
  async apply(): Promise<void> {}

  drain(instanceIds: string[], timeoutMs: number): Promise<void> {
    return this.table.drain(instanceIds, timeoutMs);
  }

  /** A later `close()` leaves the edge process serving (stopping the control plane for an upgrade). */
  keepServing() {
    this.keepServingOnClose = true;
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.watch) clearInterval(this.watch);
    this.watch = null;
    await this.restarting;
    if (!this.status) return;
    if (this.keepServingOnClose) this.notice(`the edge process (pid ${this.status.pid}) keeps serving`);
    else await this.stopEdge();
    this.status = null;
  }

  private sameListeners(status: EdgeStatus): boolean {
    const { ROUTER_PORT, ROUTER_HTTPS_PORT } = this.config;
    if (status.driver !== this.name) return false;
    if (ROUTER_PORT !== 0 && status.port !== ROUTER_PORT) return false;
    if ((ROUTER_HTTPS_PORT === undefined) !== (status.httpsPort === null)) return false;
    return ROUTER_HTTPS_PORT === undefined || ROUTER_HTTPS_PORT === 0 || status.httpsPort === ROUTER_HTTPS_PORT;
  }

  private stopEdge(): Promise<void> {
    return stopEdgeProcess(this.socketPath, this.notice);
  }

  /**
   * Runs this same program in the `edge` role, as the leader of a new session (no terminal
   * signal or parent death reaches it), its standard error in DATA_DIR/edge/edge-start.log and
   * its log in DATA_DIR/edge/edge.log (bounded).
   */
  private async spawnEdge(): Promise<EdgeStatus> {
    const startLog = join(this.dir, START_LOG_FILE);
    const stderr = openSync(startLog, 'w', 0o600);
    let exited: string | null = null;
    try {
      const child = spawn(process.execPath, [...process.execArgv, MAIN_PROGRAM], {
        detached: true,
        stdio: ['ignore', 'ignore', stderr],
        // The first administrator's password is the control plane's business, not the edge's.
        env: {
          ...process.env,
          ADMIN_PASSWORD: undefined,
          SLIPWAY_ROLE: 'edge',
          DATABASE_URL: this.databaseUrl,
          EDGE_LOG: 'file',
          // This process validated the same environment: the edge takes the result instead of validating it again.
          [EDGE_SETTINGS_ENV]: edgeSettingsOf(this.config, { SLIPWAY_ROLE: 'edge', EDGE_LOG: 'file', DATABASE_URL: this.databaseUrl }),
        },
      });
      child.once('exit', (code, signal) => (exited = signal ?? `code ${code}`));
      child.once('error', (err) => (exited = err.message));
      child.unref();
    } finally {
      closeSync(stderr);
    }
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const status = await askEdge(this.socketPath, 'status', 500).catch(() => null);
      if (status) return status;
      if (exited !== null) throw new StartupError(`the edge process exited (${exited}): ${tail(startLog)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new StartupError(`the edge process did not start within ${START_TIMEOUT_MS / 1000} s: ${tail(startLog)}`);
  }
}

/**
 * Before an edge runs in the control plane's own process (EDGE_PROCESS=in-process, the default with HAProxy): an edge
 * process an earlier start left serving this data directory (the built-in edge, the default before) holds the router
 * ports, so it is stopped first. Applications are unreachable from its stop to the new edge's listen (well under a
 * second); a running HAProxy of this data directory, adopted, has no such gap.
 */
export async function retireSeparateEdge(dataDir: string, notice: (line: string) => void = (line) => console.error(`[slipway] ${line}`)) {
  const socketPath = controlSocketPath(edgeDirectory(dataDir));
  const running = await askEdge(socketPath, 'status', 500).catch(() => null);
  if (!running) return;
  notice(`stopping the edge process (pid ${running.pid}, ${running.driver} on port ${running.port}): the edge now runs in this process`);
  await stopEdgeProcess(socketPath, notice);
}

/** Asks the edge to stop and waits until its control socket no longer answers. */
async function stopEdgeProcess(socketPath: string, notice: (line: string) => void): Promise<void> {
  await askEdge(socketPath, 'stop').catch(() => null);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!(await askEdge(socketPath, 'status', 500).catch(() => null))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  notice('the edge process did not stop in time');
}

function tail(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(-START_LOG_TAIL_BYTES).trim() || '(no output)';
  } catch {
    return '(no output)';
  }
}
