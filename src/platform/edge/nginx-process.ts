import { closeSync, fstatSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync, constants } from 'node:fs';
import { join } from 'node:path';
import { readProc, runDaemonCommand, stopGracefully } from './daemon.js';

/** Longest wait for nginx's new workers after a reload, and for its master to go on a stop. */
const RELOAD_TIMEOUT_MS = 15_000;
/** What a failure message quotes of nginx's error log. */
const ERROR_TAIL_BYTES = 2048;

export interface NginxWorker {
  pid: number;
  /** An old worker finishing its requests after a reload (`nginx: worker process is shutting down`). */
  exiting: boolean;
}

/**
 * nginx's master process as the platform runs it: a daemon of its own (it outlives the process
 * that started it), its configuration, pid file and logs in a directory only the platform
 * writes. A configuration is written next to the live one, checked with `nginx -t`, renamed over
 * it and applied with SIGHUP: the master starts workers on it and lets the old ones finish their
 * requests. A configuration nginx refuses leaves the previous one serving.
 */
export class NginxProcess {
  readonly confPath: string;
  readonly pidPath: string;
  readonly errorLogPath: string;

  constructor(
    readonly binary: string,
    readonly dir: string,
  ) {
    this.confPath = join(dir, 'nginx.conf');
    this.pidPath = join(dir, 'nginx.pid');
    this.errorLogPath = join(dir, 'error.log');
  }

  /** The running master of this configuration (its pid file names a live `nginx: master process … -c <conf>`), or null. */
  masterPid(): number | null {
    let pid: number;
    try {
      pid = Number(readFileSync(this.pidPath, 'utf8').trim());
    } catch {
      return null;
    }
    if (!Number.isInteger(pid) || pid <= 1) return null;
    const cmdline = readProc(`/proc/${pid}/cmdline`).replace(/\0/g, ' ');
    return cmdline.startsWith('nginx: master process') && cmdline.includes(this.confPath) ? pid : null;
  }

  /** The master's workers now (new and exiting ones). */
  workers(master = this.masterPid()): NginxWorker[] {
    if (master === null) return [];
    const children = readProc(`/proc/${master}/task/${master}/children`).trim().split(/\s+/).filter(Boolean).map(Number);
    const workers: NginxWorker[] = [];
    for (const pid of children) {
      const title = readProc(`/proc/${pid}/cmdline`).replace(/\0/g, ' ');
      if (title.startsWith('nginx: worker process')) workers.push({ pid, exiting: title.includes('shutting down') });
    }
    return workers;
  }

  /**
   * Serves `config`: adopts the master already running this directory's configuration (a new
   * edge process after a crash or restart: it goes on serving what it has), or starts one on
   * `config`. Returns whether it adopted.
   */
  async start(config: string): Promise<{ adopted: boolean; pid: number }> {
    const running = this.masterPid();
    // Adopted as it is: it keeps serving the routes it has until the platform applies its own.
    if (running !== null) return { adopted: true, pid: running };
    await this.check(config);
    renameSync(this.candidatePath, this.confPath);
    rmSync(this.pidPath, { force: true });
    // `daemon on`: this command returns once the master has bound its ports and gone to the background.
    await runDaemonCommand(this.binary, ['-q', '-e', this.errorLogPath, '-p', `${this.dir}/`, '-c', this.confPath]).catch((err: Error) => {
      throw new Error(`nginx did not start: ${err.message}${this.errorTail()}`);
    });
    const deadline = Date.now() + RELOAD_TIMEOUT_MS;
    for (;;) {
      const pid = this.masterPid();
      if (pid !== null && this.workers(pid).length > 0) return { adopted: false, pid };
      if (Date.now() > deadline) throw new Error(`nginx started but no worker answered${this.errorTail()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Applies `config` without dropping a connection; resolves once workers on it run (the old ones finish apart). */
  async reload(config: string): Promise<void> {
    const master = this.masterPid();
    if (master === null) throw new Error('nginx is not running');
    await this.check(config);
    const before = new Set(this.workers(master).map((w) => w.pid));
    renameSync(this.candidatePath, this.confPath);
    process.kill(master, 'SIGHUP');
    const deadline = Date.now() + RELOAD_TIMEOUT_MS;
    for (;;) {
      // Live once new workers run and every old one stopped accepting (it only finishes what it has).
      const workers = this.workers(master);
      if (workers.some((w) => !before.has(w.pid) && !w.exiting) && workers.every((w) => !before.has(w.pid) || w.exiting)) return;
      if (Date.now() > deadline) throw new Error(`nginx did not apply its new configuration${this.errorTail()}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves once no worker of an earlier configuration is left (its requests finished), or after `timeoutMs`. */
  async drained(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.workers().some((w) => w.exiting) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  /** Graceful stop (SIGQUIT: requests in flight finish), then SIGTERM past the timeout. */
  async stop(): Promise<void> {
    const master = this.masterPid();
    if (master === null) return;
    await stopGracefully(master, 'SIGQUIT');
  }

  private get candidatePath() {
    return join(this.dir, 'nginx.conf.next');
  }

  /** Writes `config` as the candidate (0600) and has nginx check it; a refusal names nginx's reason. */
  private async check(config: string): Promise<void> {
    rmSync(this.candidatePath, { force: true });
    writeFileSync(this.candidatePath, config, { mode: 0o600, flag: 'wx' });
    await runDaemonCommand(this.binary, ['-t', '-q', '-e', this.errorLogPath, '-p', `${this.dir}/`, '-c', this.candidatePath]).catch(
      (err: Error) => {
        throw new Error(`nginx refused the configuration (the previous one keeps serving): ${err.message}`);
      },
    );
  }

  private errorTail(): string {
    const tail = readTail(this.errorLogPath, ERROR_TAIL_BYTES).trim();
    return tail ? `\n${tail}` : '';
  }
}

function readTail(path: string, bytes: number): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return '';
  }
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.min(size, bytes));
    readSync(fd, buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}
