import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readProc, runDaemonCommand, stopGracefully } from './daemon.js';
import { haproxyCommand } from './haproxy-cli.js';

const START_TIMEOUT_MS = 15_000;
const RELOAD_TIMEOUT_MS = 15_000;
const OUTPUT_TAIL_BYTES = 2048;

/** The master CLI's `show proc`: the current worker(s) and those of earlier configurations still finishing. */
export interface HaproxyProcs {
  master: number;
  reloads: number;
  failedReloads: number;
  workers: number[];
  oldWorkers: number[];
}

/**
 * HAProxy's master process as the platform runs it (master-worker mode, a daemon of its own
 * that outlives the process that started it): its configuration, pid file and master CLI
 * socket (0600) in a directory only the platform writes. A configuration is written next to
 * the live one, checked with `haproxy -c`, renamed over it and applied by the master's
 * `reload`: a new worker takes over the listening sockets (passed, never closed), the old one
 * finishes its requests. A configuration HAProxy refuses leaves the previous one serving.
 */
export class HaproxyProcess {
  readonly confPath: string;
  readonly pidPath: string;
  readonly socketPath: string;

  constructor(
    readonly binary: string,
    readonly dir: string,
  ) {
    this.confPath = join(dir, 'haproxy.cfg');
    this.pidPath = join(dir, 'haproxy.pid');
    this.socketPath = join(dir, 'master.sock');
  }

  /** The running master of this configuration (its pid file names a live haproxy with `-f <conf>`), or null. */
  masterPid(): number | null {
    let pid: number;
    try {
      pid = Number(readFileSync(this.pidPath, 'utf8').trim());
    } catch {
      return null;
    }
    if (!Number.isInteger(pid) || pid <= 1) return null;
    const args = readProc(`/proc/${pid}/cmdline`).split('\0');
    const f = args.indexOf('-f');
    return f > 0 && args[f + 1] === this.confPath && args.includes('-W') ? pid : null;
  }

  /** One command on the master CLI (`@1 …` for the current worker). */
  command(command: string): Promise<string> {
    return haproxyCommand(this.socketPath, command);
  }

  async procs(): Promise<HaproxyProcs> {
    const answer = await this.command('show proc');
    const procs: HaproxyProcs = { master: 0, reloads: 0, failedReloads: 0, workers: [], oldWorkers: [] };
    let section = 'master';
    for (const line of answer.split('\n')) {
      if (line.startsWith('# workers')) section = 'workers';
      else if (line.startsWith('# old workers')) section = 'old';
      else if (line.startsWith('#')) section = line.startsWith('#<PID>') ? 'master' : 'other';
      else {
        const m = /^(\d+)\s+(\S+)\s+(\d+)(?:\s+\[failed: (\d+)\])?/.exec(line);
        if (!m) continue;
        if (m[2] === 'master') Object.assign(procs, { master: Number(m[1]), reloads: Number(m[3]), failedReloads: Number(m[4] ?? 0) });
        else if (section === 'workers') procs.workers.push(Number(m[1]));
        else if (section === 'old') procs.oldWorkers.push(Number(m[1]));
      }
    }
    return procs;
  }

  /** Starts HAProxy on `config`, or adopts the master already running this configuration. */
  async start(config: string): Promise<{ adopted: boolean; pid: number }> {
    const running = this.masterPid();
    if (running !== null) return { adopted: true, pid: running };
    // No `haproxy -c` first (as a reload has): nothing serves yet to keep, and the start itself parses the
    // configuration and refuses a bad one with the same messages (a separate check was ~80 ms of each start).
    this.writeCandidate(config);
    renameSync(this.candidatePath, this.confPath);
    rmSync(this.socketPath, { force: true });
    await runDaemonCommand(this.binary, ['-W', '-D', '-f', this.confPath, '-p', this.pidPath, '-S', `${this.socketPath},mode,600`]).catch(
      (err: Error) => {
        // The refused configuration goes back to being a candidate: haproxy.cfg is only ever one that ran.
        renameSync(this.confPath, this.candidatePath);
        throw new Error(`HAProxy refused to start: ${err.message}`);
      },
    );
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const pid = this.masterPid();
      const procs = pid === null ? null : await this.procs().catch(() => null);
      if (pid !== null && procs && procs.workers.length > 0) return { adopted: false, pid };
      if (Date.now() > deadline) throw new Error('HAProxy started but no worker answered');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Applies `config`; resolves once a worker on it serves (the old ones finish apart). `beforeSwap`
   * runs once the configuration passed its check, just before the master reloads.
   */
  async reload(config: string, beforeSwap?: () => Promise<void>): Promise<void> {
    if (this.masterPid() === null) throw new Error('HAProxy is not running');
    await this.check(config);
    await beforeSwap?.();
    const before = await this.procs();
    renameSync(this.candidatePath, this.confPath);
    await this.command('reload').catch(() => ''); // the master re-executes itself: the connection may close unanswered
    const deadline = Date.now() + RELOAD_TIMEOUT_MS;
    for (;;) {
      const now = await this.procs().catch(() => null);
      if (now && now.failedReloads > before.failedReloads) {
        const logs = await this.command('show startup-logs').catch(() => '');
        throw new Error(`HAProxy refused the configuration (the previous one keeps serving): ${logs.slice(-OUTPUT_TAIL_BYTES)}`);
      }
      if (now && now.reloads > before.reloads && now.workers.length > 0 && now.workers.every((w) => !before.workers.includes(w))) return;
      if (Date.now() > deadline) throw new Error('HAProxy did not apply its new configuration');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves once no worker of an earlier configuration is left (its requests finished), or after `timeoutMs`. */
  async drained(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const procs = await this.procs().catch(() => null);
      if (!procs || procs.oldWorkers.length === 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Graceful stop (SIGUSR1: the workers finish their requests), then SIGTERM past the timeout. */
  async stop(): Promise<void> {
    const master = this.masterPid();
    if (master === null) return;
    await stopGracefully(master, 'SIGUSR1');
  }

  private get candidatePath() {
    return join(this.dir, 'haproxy.cfg.next');
  }

  private writeCandidate(config: string): void {
    rmSync(this.candidatePath, { force: true });
    writeFileSync(this.candidatePath, config, { mode: 0o600, flag: 'wx' });
  }

  /** Writes `config` as the candidate (0600) and has HAProxy check it; a refusal names HAProxy's reason. */
  private async check(config: string): Promise<void> {
    this.writeCandidate(config);
    await runDaemonCommand(this.binary, ['-c', '-q', '-f', this.candidatePath]).catch((err: Error) => {
      throw new Error(`HAProxy refused the configuration (the previous one keeps serving): ${err.message}`);
    });
  }
}
