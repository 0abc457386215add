import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, chmodSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { SecretBox } from '../crypto/secret-box.js';
import type { Db } from '../db/database.js';
import type { AddonKind } from '../db/schema.js';
import {
  CONTROL_PIPES,
  controlSandbox,
  hostListens,
  runSandboxed,
  type PreparedSandbox,
  type Sandbox,
  type SandboxControl,
} from '../sandbox/index.js';
import {
  connectShim,
  launchShim,
  processStartTicks,
  shimListening,
  shimSocketPath,
  type ShimConnection,
} from '../runtime/local/shim-client.js';
import { killGroup } from '../runtime/local/process-group.js';
import { ADOPTED_SHIM_PROTOCOLS } from '../runtime/local/shim-protocol.js';
import type { AddonBackend } from './backend.js';
import { openCredentials, type AddonCredentials } from './credentials.js';
import { findPlan, type AddonPlan } from './plans.js';
import { endForwarders, startForwarder } from './forwarder.js';
import { PostgresTemplates, postgresAdoptTemplateCommand } from './postgres-template.js';
import { accepts, adminClient, postgresInitCommand, redisCommands, serverCommand, serverEnv } from './servers.js';

/** What the supervisor needs of an add-on's row. */
export interface AddonRecord {
  id: string;
  kind: AddonKind;
  plan: string;
  port: number;
  credentials_sealed: string;
  pid: number | null;
  start_ticks: string | null;
}

interface Running {
  record: AddonRecord;
  sandbox: PreparedSandbox;
  pid: number | null;
  connection: ShimConnection | null;
  control: SandboxControl | null;
  stopping: boolean;
  crashes: number;
  restartTimer: NodeJS.Timeout | null;
  exited: Promise<void>;
  /** The last output (bounded), for a failure's detail. */
  tail: string;
  /** What relays the host's loopback port to the server's socket, when this process started it. */
  forwarder: ChildProcess | null;
  /** While a previous process's forwarder relays (not our child: no exit event), the check that it still listens. */
  adoptedForwarderCheck: NodeJS.Timeout | null;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;
const TAIL_BYTES = 2048;
/** How often an adopted forwarder (a previous process's, so no exit event reaches us) is checked for still listening. */
const ADOPTED_FORWARDER_CHECK_MS = 2000;

/**
 * Runs each add-on's server as its own sandbox user (bubblewrap, its own network namespace and
 * control group with the plan's memory and CPU), under a shim like an instance's so it outlives
 * the platform process, restarted with backoff when it ends, and re-adopted at the next start.
 * Its network namespace has nothing but its loopback; a forwarder relays one host loopback port
 * to its unix socket (see forwarder.ts); the only sandboxes given that port are the instances of
 * the applications it is attached to.
 */
export class AddonSupervisor implements AddonBackend {
  readonly runs = 'local' as const;
  private readonly running = new Map<string, Running>();
  private readonly shimDir: string;
  private readonly templates: PostgresTemplates;
  private shuttingDown = false;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly sandbox: Sandbox,
    private readonly root: string,
    private readonly log: { warn(obj: object, msg: string): void },
    private readonly options: {
      /** false only in bench/addon-backups.ts, to measure what WAL archiving costs: every add-on archives. */
      archiveWal?: boolean;
      /** Called as each step of a provision ends (bench/addons.ts splits where the time goes). */
      trace?: (step: string) => void;
    } = {},
  ) {
    this.shimDir = join(root, 'shims');
    this.templates = new PostgresTemplates(join(root, 'templates'), 'slipway');
  }

  dirOf(id: string) {
    return join(this.root, id);
  }

  /** Adopts the add-ons a previous platform process left running, starts the others that should run. */
  async start(): Promise<void> {
    mkdirSync(this.shimDir, { recursive: true, mode: 0o700 });
    chmodSync(this.root, 0o711);
    chmodSync(this.shimDir, 0o700);
    const rows = await this.db
      .selectFrom('addons')
      .select(['id', 'kind', 'plan', 'port', 'credentials_sealed', 'pid', 'start_ticks'])
      .where('deleted_at', 'is', null)
      .where('status', 'in', ['running', 'failed'])
      .execute();
    for (const row of rows) {
      try {
        if (!(await this.adopt(row))) await this.launch(row);
      } catch (err) {
        await this.setStatus(row.id, 'failed', (err as Error).message);
      }
    }
    // A create or restore the previous process did not finish: its server (a fork replaying WAL
    // under its shim) is stopped, and the record says so; nothing of it was attached.
    const unfinished = await this.db
      .selectFrom('addons')
      .select(['id', 'kind', 'plan', 'port', 'credentials_sealed', 'pid', 'start_ticks'])
      .where('deleted_at', 'is', null)
      .where('status', '=', 'creating')
      .execute();
    for (const row of unfinished) {
      if (await this.adopt(row).catch(() => false)) await this.stop(row.id);
      await this.setStatus(
        row.id,
        'failed',
        'interrupted: the platform stopped before it was ready; delete it and create or restore again',
      );
    }
  }

  /** Creates the server's data and starts it; resolves once it accepts connections. */
  async provision(record: AddonRecord): Promise<void> {
    const trace = this.options.trace ?? (() => {});
    const credentials = openCredentials(this.secrets, record.credentials_sealed);
    const dir = this.dirOf(record.id);
    // Made here, now, by the platform: nothing of a tenant's has ever been in it.
    const fresh = mkdirSync(dir, { recursive: true, mode: 0o700 }) !== undefined;
    if (record.kind === 'postgres' && !existsSync(join(dir, 'data', 'PG_VERSION'))) {
      const copied = fresh && credentials.adminUser === this.templates.adminUser && (await this.copyTemplate(record, join(dir, 'data')));
      trace(copied ? 'template copied' : 'no template');
      const command = copied
        ? postgresAdoptTemplateCommand(dir, credentials.adminUser!, planOf(record).sharedBuffersMiB ?? 16)
        : postgresInitCommand(dir, credentials.adminUser!);
      const prepared = await this.prepare(record, command, `addon-init-${record.id}`);
      trace('init sandbox prepared');
      try {
        const result = await runSandboxed(prepared, {
          env: { PATH: '/usr/bin:/bin', ...serverEnv('postgres', credentials) },
          timeoutMs: 120_000,
        });
        const failed = copied ? 'setting its password' : 'initdb';
        // The line that says why: a full disk's, which initdb follows with its clean-up line, or the last.
        const lines = result.stderr.trim().split('\n');
        const why = lines.find((line) => /no space left on device/i.test(line)) ?? lines.pop();
        if (result.code !== 0) throw new Error(`${failed} failed: ${why || `exit code ${result.code}`}`);
      } finally {
        await prepared.cgroup.remove();
      }
      trace(copied ? 'password set (single-user mode)' : 'initdb done');
    }
    await this.launch(record);
    trace('server launched');
    await this.ready(record, credentials);
    trace('accepting connections');
    if (record.kind === 'postgres') await this.setPostgresUser(record.port, credentials, true);
    trace('user and database made');
  }

  /** Copies the platform's template cluster into `data`; false (initdb instead) when it cannot be had. */
  private async copyTemplate(record: AddonRecord, data: string): Promise<boolean> {
    try {
      await this.templates.copyTo(data);
      return true;
    } catch (err) {
      await rm(data, { recursive: true, force: true });
      // A full disk is not a missing template: initdb would fail the same way, less clearly.
      if (/no space left on device/i.test((err as Error).message)) throw err;
      this.log.warn({ addonId: record.id, err: (err as Error).message }, 'no Postgres template cluster: running initdb for this add-on');
      return false;
    }
  }

  /** Sets the application user's password (creating the user and its database the first time). */
  async setPostgresUser(port: number, c: AddonCredentials, create: boolean): Promise<void> {
    const client = adminClient(port, c, 'postgres');
    await client.connect();
    try {
      const password = client.escapeLiteral(c.password);
      const user = client.escapeIdentifier(c.user);
      const exists = (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [c.user])).rowCount! > 0;
      if (!exists && create) await client.query(`CREATE ROLE ${user} LOGIN PASSWORD ${password}`);
      else await client.query(`ALTER ROLE ${user} PASSWORD ${password}`);
      if (!exists && create) await client.query(`CREATE DATABASE ${client.escapeIdentifier(c.database!)} OWNER ${user}`);
    } finally {
      await client.end();
    }
  }

  /** Gives a running Redis its new password (rotation); Postgres uses setPostgresUser. */
  async setRedisPassword(port: number, previous: AddonCredentials, next: AddonCredentials): Promise<void> {
    const reply = await redisCommands(port, previous, [['CONFIG', 'SET', 'requirepass', next.password]]);
    if (reply?.[0] !== 'OK') throw new Error('Redis did not take the new password');
  }

  async rotate(record: AddonRecord, previous: AddonCredentials, next: AddonCredentials): Promise<void> {
    if (record.kind === 'postgres') await this.setPostgresUser(record.port, next, false);
    else await this.setRedisPassword(record.port, previous, next);
  }

  /**
   * Runs a command to its end in a sandbox of the add-on, as its own user (a backup, a restore, a
   * drill): only `writable` (default its own directory) is writable; `reachServer` gives it the
   * server's port on its loopback (pg_basebackup), nothing else of the network.
   */
  async runTask(
    record: AddonRecord,
    command: string,
    options: {
      name: string;
      writable?: string[];
      reachServer?: boolean;
      env?: Record<string, string>;
      timeoutMs: number;
      /** Its standard output as a stream (a backup's tar), not captured: see `run`'s takeStdout. */
      takeStdout?: (stdout: Readable) => void;
      /** Its standard input (a backup's tar to extract). */
      stdin?: Readable;
    },
  ) {
    const plan = planOf(record);
    const dir = this.dirOf(record.id);
    const prepared = await this.sandbox.prepare({
      applicationId: record.id,
      addonId: record.id,
      name: `${options.name}-${record.id}`,
      command,
      view: { cwd: dir, writable: options.writable ?? [dir], innerUser: { uid: 65534, gid: 65534 } },
      limits: { memoryBytes: plan.memoryMiB * 1024 * 1024, cpuMillicores: plan.cpuMillicores },
      network: { outbound: false, ...(options.reachServer ? { hostLoopbackPorts: [record.port] } : {}) },
    });
    try {
      return await runSandboxed(prepared, {
        env: { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', ...options.env },
        timeoutMs: options.timeoutMs,
        maxStdoutBytes: 1024 * 1024,
        ...(options.takeStdout ? { takeStdout: options.takeStdout } : {}),
        ...(options.stdin ? { stdin: options.stdin } : {}),
      });
    } finally {
      await prepared.cgroup.remove();
    }
  }

  /**
   * Starts a server whose data a restore just laid down and waits until it has replayed its WAL
   * and accepts connections (recovery runs with hot_standby off: no connection before the end).
   * A server that ends meanwhile (a recovery target it cannot reach) fails it at once. The
   * caller marks it running once it has made it its own (passwords, settings).
   */
  async startRestored(record: AddonRecord, credentials: AddonCredentials, timeoutMs: number): Promise<void> {
    await this.launch(record);
    try {
      await this.ready(record, credentials, timeoutMs, true, false);
    } catch (err) {
      await this.stop(record.id);
      throw err;
    }
  }

  /** Stops, then starts again with the row as it is now (a new plan's limits). */
  async restart(record: AddonRecord): Promise<void> {
    await this.stop(record.id);
    await this.launch(record);
    await this.ready(record, openCredentials(this.secrets, record.credentials_sealed));
  }

  /** Stops the server (a clean shutdown, then the group is killed after the grace time). */
  async stop(id: string): Promise<void> {
    const run = this.running.get(id);
    if (!run) return;
    run.stopping = true;
    if (run.restartTimer) clearTimeout(run.restartTimer);
    this.endAdoptedWatch(run);
    const server = run.pid ? await serverProcess(run.pid) : null;
    // Postgres' fast shutdown (SIGINT) or Redis' save-and-exit (SIGTERM), to the server alone:
    // signalling bubblewrap would end it with SIGKILL through its parent-death signal.
    if (server) process.kill(server, run.record.kind === 'postgres' ? 'SIGINT' : 'SIGTERM');
    else killGroup(run.pid, 'SIGTERM');
    const killer = setTimeout(() => killGroup(run.pid, 'SIGKILL'), STOP_GRACE_MS);
    await run.exited;
    clearTimeout(killer);
    await this.endForwarding(run.record);
    await run.sandbox.cgroup.remove();
    this.running.delete(id);
    await this.db.updateTable('addons').set({ pid: null, start_ticks: null }).where('id', '=', id).execute();
  }

  /** Removes a purged add-on's files (never following a link: rm does not). */
  async remove(id: string): Promise<void> {
    await this.stop(id);
    await rm(this.dirOf(id), { recursive: true, force: true });
  }

  /** The server's process group leader, while it runs (the bench reads its memory). */
  pidOf(id: string): number | null {
    return this.running.get(id)?.pid ?? null;
  }

  /** Stops following the servers and leaves them running: the next platform process adopts them. */
  async detach(): Promise<void> {
    this.shuttingDown = true;
    const runs = [...this.running.values()];
    this.running.clear();
    await Promise.all(
      runs.map((run) => {
        if (run.restartTimer) clearTimeout(run.restartTimer);
        this.endAdoptedWatch(run);
        run.stopping = true;
        return run.connection?.release();
      }),
    );
  }

  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.all([...this.running.keys()].map((id) => this.stop(id)));
  }

  private prepare(record: AddonRecord, command: string, name: string): Promise<PreparedSandbox> {
    const plan = planOf(record);
    const dir = this.dirOf(record.id);
    return this.sandbox.prepare({
      applicationId: record.id,
      addonId: record.id,
      name,
      command,
      // Seen inside as `nobody`: the servers look their user up, and the sandbox user has no passwd entry.
      view: { cwd: dir, writable: [dir], innerUser: { uid: 65534, gid: 65534 } },
      limits: { memoryBytes: plan.memoryMiB * 1024 * 1024, cpuMillicores: plan.cpuMillicores },
      network: { outbound: false },
    });
  }

  private async launch(record: AddonRecord): Promise<void> {
    if (this.shuttingDown) throw new Error('the platform is stopping');
    const trace = this.options.trace ?? (() => {});
    const credentials = openCredentials(this.secrets, record.credentials_sealed);
    // A forwarder a killed platform left behind (or an earlier version's pasta) still holds the port.
    await this.endForwarding(record);
    trace('stale forwarders looked for');
    const sandbox = await this.prepare(
      record,
      serverCommand(record.kind, this.dirOf(record.id), record.port, planOf(record), { archiveWal: this.options.archiveWal ?? true }),
      `addon-${record.id}`,
    );
    const run: Running = this.running.get(record.id) ?? {
      record,
      sandbox,
      pid: null,
      connection: null,
      control: null,
      stopping: false,
      crashes: 0,
      restartTimer: null,
      exited: Promise.resolve(),
      tail: '',
      forwarder: null,
      adoptedForwarderCheck: null,
    };
    run.record = record;
    run.sandbox = sandbox;
    this.running.set(record.id, run);
    this.forward(run);
    const socket = shimSocketPath(this.shimDir, record.id);
    await rm(socket, { force: true });
    const shim = launchShim(
      {
        id: record.id,
        file: sandbox.file,
        args: sandbox.args,
        cwd: this.dirOf(record.id),
        env: { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', ...serverEnv(record.kind, credentials) },
        socket,
        bufferBytes: 64 * 1024,
        controlFds: CONTROL_PIPES,
        lingerMs: 60_000,
      },
      CONTROL_PIPES,
    );
    trace('server sandbox prepared');
    run.control = controlSandbox(shim, sandbox);
    run.control.ready.then(
      () => trace('sandbox mapped, network attached'),
      (err: Error) => (run.tail += `sandbox failed to start: ${err.message}\n`),
    );
    let gone = false;
    shim.once('exit', () => (gone = true));
    const connection = await this.follow(run, () => connectShim(socket, this.events(run), Date.now() + 10_000, () => gone));
    connection.accept();
    trace('shim connected');
  }

  private async adopt(record: AddonRecord): Promise<boolean> {
    const socket = shimSocketPath(this.shimDir, record.id);
    if (!record.pid || !record.start_ticks || !shimListening(socket)) return false;
    if ((await processStartTicks(record.pid)) !== record.start_ticks) return false;
    const sandbox = await this.prepare(record, '', `addon-${record.id}`);
    const run: Running = {
      record,
      sandbox,
      pid: null,
      connection: null,
      control: null,
      stopping: false,
      crashes: 0,
      restartTimer: null,
      exited: Promise.resolve(),
      tail: '',
      forwarder: null,
      adoptedForwarderCheck: null,
    };
    this.running.set(record.id, run);
    const connection = await this.follow(run, () => connectShim(socket, this.events(run), Date.now() + 2000)).catch(() => null);
    if (!connection || !ADOPTED_SHIM_PROTOCOLS.includes(connection.hello.protocol) || connection.hello.pid !== record.pid) {
      connection?.detach();
      this.running.delete(record.id);
      return false;
    }
    connection.accept();
    // The previous process's forwarder (or pasta) keeps relaying; one that is gone (now or later) is started again.
    if (await hostListens(record.port)) this.watchAdoptedForwarder(run);
    else this.forward(run);
    return true;
  }

  /**
   * An adopted forwarder is no child of this process, so its end sends no exit event: check that the port
   * still listens, and once it does not, start our own (supervised by `forward`).
   */
  private watchAdoptedForwarder(run: Running): void {
    run.adoptedForwarderCheck = setInterval(() => {
      if (run.stopping || this.shuttingDown || this.running.get(run.record.id) !== run || run.forwarder) return this.endAdoptedWatch(run);
      void hostListens(run.record.port).then((listens) => {
        if (listens || run.stopping || this.shuttingDown || this.running.get(run.record.id) !== run || run.forwarder) return;
        this.endAdoptedWatch(run);
        this.log.warn({ addonId: run.record.id }, 'the adopted forwarder to the add-on ended; starting it again');
        this.forward(run);
      });
    }, ADOPTED_FORWARDER_CHECK_MS).unref();
  }

  private endAdoptedWatch(run: Running): void {
    if (run.adoptedForwarderCheck) clearInterval(run.adoptedForwarderCheck);
    run.adoptedForwarderCheck = null;
  }

  /** Starts the add-on's forwarder, started again if it ends while the server should run. */
  private forward(run: Running): void {
    const forwarder = startForwarder(
      run.record.kind,
      this.dirOf(run.record.id),
      run.record.port,
      run.sandbox.uid,
      this.sandbox.hiddenPaths,
    );
    run.forwarder = forwarder;
    forwarder.once('exit', () => {
      if (run.forwarder !== forwarder || run.stopping || this.shuttingDown) return;
      run.forwarder = null;
      this.log.warn({ addonId: run.record.id }, 'the forwarder to the add-on ended; starting it again');
      setTimeout(() => {
        if (!run.stopping && !this.shuttingDown && this.running.get(run.record.id) === run && !run.forwarder) this.forward(run);
      }, 1000).unref();
    });
  }

  /** Ends whatever relays the add-on's port: its forwarder (this process's or a previous one's), an earlier version's pasta. */
  private async endForwarding(record: AddonRecord): Promise<void> {
    const run = this.running.get(record.id);
    // Ended on purpose: not started again (see `forward`).
    const own = run?.forwarder;
    if (run) run.forwarder = null;
    if (own) killGroup(own.pid, 'SIGKILL');
    // Nothing listens (a new add-on, the usual case): no process to look for, the scan of every
    // process's command line is skipped (it costs hundreds of milliseconds on a busy machine).
    if (!(await hostListens(record.port))) return;
    await this.sandbox.endNetworkForwarding(record.port);
    const forwarder = { uid: await this.sandbox.addonUid(record.id), isSandboxUid: (uid: number) => this.sandbox.isSandboxUid(uid) };
    await endForwarders(forwarder, record.kind, this.dirOf(record.id), record.port);
    // The port is free once the killed ones are gone (a new forwarder would otherwise find it taken).
    for (let i = 0; i < 100 && (await hostListens(record.port)); i++) await new Promise((r) => setTimeout(r, 20));
  }

  private events(run: Running) {
    let resolveExited: () => void = () => {};
    run.exited = new Promise((resolve) => (resolveExited = resolve));
    let ended = false;
    return {
      output: (_stream: 'stdout' | 'stderr', chunk: Buffer) => {
        run.tail = (run.tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
      },
      dropped: () => {},
      exit: (code: number | null, signal: NodeJS.Signals | null) => {
        if (ended) return;
        ended = true;
        run.control?.release();
        run.connection = null;
        killGroup(run.pid, 'SIGKILL');
        run.pid = null;
        resolveExited();
        if (run.stopping || this.shuttingDown) return;
        const why = `${run.record.kind} ended (${signal ? `signal ${signal}` : `exit code ${code}`}): ${lastLine(run.tail)}`;
        void this.recordStatus(run.record.id, 'failed', why);
        this.log.warn({ addonId: run.record.id }, why);
        // Restarted with backoff, like a crashed instance.
        const delay = Math.min(1000 * 2 ** run.crashes++, 30_000);
        run.restartTimer = setTimeout(() => {
          run.restartTimer = null;
          if (run.stopping || this.shuttingDown) return;
          void this.launch(run.record)
            .then(() => this.ready(run.record, openCredentials(this.secrets, run.record.credentials_sealed)))
            .catch((err: Error) => this.recordStatus(run.record.id, 'failed', err.message));
        }, delay);
      },
    };
  }

  private async follow(run: Running, connect: () => Promise<ShimConnection>): Promise<ShimConnection> {
    const connection = await connect();
    run.connection = connection;
    run.pid = connection.hello.pid;
    await this.db
      .updateTable('addons')
      .set({ pid: connection.hello.pid, start_ticks: connection.hello.startTicks })
      .where('id', '=', run.record.id)
      .execute();
    void run.control?.networkLost.then(() => killGroup(run.pid, 'SIGKILL'));
    return connection;
  }

  /** Waits until the server accepts the platform's connection; marks the add-on running. */
  private async ready(
    record: AddonRecord,
    credentials: AddonCredentials,
    timeoutMs = READY_TIMEOUT_MS,
    endOnExit = false,
    markRunning = true,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const run = this.running.get(record.id);
    while (!(await accepts(record.kind, record.port, credentials))) {
      if (Date.now() > deadline)
        throw new Error(`${record.kind} did not accept connections within ${timeoutMs / 1000} s: ${lastLine(run?.tail ?? '')}`);
      if (endOnExit && run && run.crashes > 0)
        throw new Error(
          `${record.kind} ended: ${
            run.tail
              .split('\n')
              .find((l) => /FATAL|PANIC/.test(l))
              ?.trim() ?? lastLine(run.tail)
          }`,
        );
      await new Promise((r) => setTimeout(r, 25));
    }
    if (run) run.crashes = 0;
    if (markRunning) await this.setStatus(record.id, 'running', null);
  }

  /**
   * setStatus for what runs in the background (a crash, its restart), where nobody awaits it: a
   * database that is away, or a pool already ended by a stop, is logged instead of rejecting unhandled
   * (which would end the process).
   */
  private recordStatus(id: string, status: 'running' | 'failed', detail: string | null): Promise<void> {
    return this.setStatus(id, status, detail).catch((err: unknown) =>
      this.log.warn({ addonId: id, status, detail, err }, 'recording the add-on status failed'),
    );
  }

  private async setStatus(id: string, status: 'running' | 'failed', detail: string | null) {
    await this.db
      .updateTable('addons')
      .set({ status, status_detail: detail, updated_at: new Date() })
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .execute();
  }
}

function planOf(record: AddonRecord): AddonPlan {
  const plan = findPlan(record.kind, record.plan);
  if (!plan) throw new Error(`unknown plan ${record.plan}`);
  return plan;
}

function lastLine(text: string): string {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? 'no output'
  ).slice(0, 300);
}

/** The server inside the sandbox: bubblewrap's child in the instance's process group (Postgres' postmaster, redis-server). */
async function serverProcess(group: number): Promise<number | null> {
  const stats = new Map<number, { comm: string; ppid: number; pgrp: number }>();
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    stats.set(Number(entry), { comm, ppid: Number(ppid), pgrp: Number(pgrp) });
  }
  for (const [pid, s] of stats) {
    if (s.pgrp !== group || !(s.comm === 'postgres' || s.comm.startsWith('redis-server'))) continue;
    if (stats.get(s.ppid)?.comm === 'bwrap') return pid;
  }
  return null;
}
