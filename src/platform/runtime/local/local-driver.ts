import { spawn, type ChildProcess } from 'node:child_process';
import { countDiskFull, isDiskFull } from '../../storage/disk-space.js';
import { chmodSync, createWriteStream, mkdirSync, renameSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import {
  CONTROL_PIPES,
  controlSandbox,
  FORWARD_HOST,
  SandboxUnavailable,
  type PreparedSandbox,
  type Sandbox,
  type SandboxNetwork,
  type SandboxView,
} from '../../sandbox/index.js';
import type {
  InstanceOutput,
  InstanceSpec,
  InstanceStatus,
  LeftoverInstance,
  OneOffResult,
  OneOffSpec,
  ResourceUsage,
  RuntimeDriver,
} from '../port.js';
import { LineScrubber } from '../scrub.js';
import { runOneOff } from './one-off.js';
import { countLines, DEFAULT_OUTPUT_RATE, OutputRateGate, type OutputRate } from './output-rate.js';
import { freePort, killGroup } from './process-group.js';
import { processEnvironment, readProcessGroups } from './proc-stats.js';

export interface LocalDriverOptions {
  /** Loopback address instances listen on. */
  host?: string;
  /** Where each instance's output is written (`<dir>/<instance id>.log`). */
  logDir: string;
  /** Past this size an instance's file is rotated to `<id>.log.1` (default 8 MiB). */
  maxLogFileBytes?: number;
  /** First restart delay after a crash; doubles per consecutive crash up to `maxBackoffMs`. */
  restartBackoffMs?: number;
  maxBackoffMs?: number;
  /** Time between TERM and KILL when stopping. */
  stopGraceMs?: number;
  /** An instance that ran this long before crashing restarts with the first delay again. */
  stableAfterMs?: number;
  /** PATH and the like: the only parts of the platform's own environment instances see. */
  baseEnv?: Record<string, string>;
  /** Runs every instance and one-off in this sandbox (unset: as the platform's user, unconfined). */
  sandbox?: Sandbox | null;
  /** Output one instance may hand the platform per second; the rest is dropped and counted in its log. */
  outputRate?: OutputRate;
}

/** The name of the variable that marks a process as ours, so leftovers are recognized safely. */
export const INSTANCE_ID_VARIABLE = 'SLIPWAY_INSTANCE_ID';

interface LocalInstance {
  spec: InstanceSpec;
  status: InstanceStatus;
  child: ChildProcess | null;
  stopping: boolean;
  consecutiveCrashes: number;
  lastSpawn: number;
  restartTimer: NodeJS.Timeout | null;
  exited: Promise<void>;
  log: WriteStream;
  /** Bytes written to the current log file (rotated at `maxLogFileBytes`). */
  logBytes: number;
  /** When writing the log file last failed (0: never). */
  logFailedAt: number;
  /** Previous CPU reading, for the average since then. */
  cpu: { seconds: number; at: number } | null;
  /** The sandbox it runs in (same user and control group across restarts), when sandboxed. */
  sandbox: PreparedSandbox | null;
  /** OOM kills of its control group seen so far. */
  oomKills: number;
}

/** How long a log file that failed to write (a full disk) rests before it is opened again. */
const LOG_REOPEN_MS = 5000;

/** Default size past which an instance's output file is rotated (to `<id>.log.1`), so a chatty app cannot fill the disk. */
const MAX_INSTANCE_LOG_BYTES = 8 * 1024 * 1024;

/** Platform variables never handed to applications (the database, keys) stay out by construction. */
function defaultBaseEnv(sandboxed: boolean): Record<string, string> {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TZ', ...(sandboxed ? [] : ['HOME'])];
  const env: Record<string, string> = {};
  for (const k of keep) if (process.env[k]) env[k] = process.env[k]!;
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  // A sandbox has no home of the platform's: its private /tmp is the only other writable place.
  if (sandboxed) env.HOME = '/tmp';
  return env;
}

/** What a sandboxed process sees: its own artifact directory writable, or its image's root. */
function sandboxView(spec: { artifactPath: string; root?: InstanceSpec['root'] }): SandboxView {
  if (spec.root) return { cwd: spec.root.workdir, writable: [], root: spec.root.rootfs, innerUser: spec.root.user ?? { uid: 0, gid: 0 } };
  return { cwd: spec.artifactPath, writable: [spec.artifactPath] };
}

/** Why a sandboxed process ended, in words: an OOM kill names the pod class's limit. */
export function exitReason(
  code: number | null,
  signal: NodeJS.Signals | null,
  outOfMemory: boolean,
  limits: InstanceSpec['limits'],
): string {
  if (outOfMemory && limits) {
    return `OOM: exceeded ${Math.round(limits.memoryBytes / (1024 * 1024))} MiB${limits.podClass ? ` of ${limits.podClass}` : ''}`;
  }
  if (outOfMemory) return 'OOM: killed for lack of memory';
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/**
 * Runs instances as local process groups: `sh -c <cmd>` in the artifact directory,
 * restarted with exponential backoff when they crash, stopped (TERM, then KILL) as a group.
 */
export class LocalProcessDriver implements RuntimeDriver {
  readonly name = 'local';
  private readonly instances = new Map<string, LocalInstance>();
  private readonly oneOffs = new Set<ChildProcess>();
  private readonly listeners: Array<(s: InstanceStatus) => void> = [];
  private readonly outputListeners: Array<(output: InstanceOutput) => void> = [];
  private readonly usedPorts = new Set<number>();
  private readonly host: string;
  private readonly backoff: number;
  private readonly maxBackoff: number;
  private readonly grace: number;
  private readonly stableAfter: number;
  private readonly baseEnv: Record<string, string>;
  private shuttingDown = false;
  private readonly sandbox: Sandbox | null;

  constructor(private readonly options: LocalDriverOptions) {
    this.sandbox = options.sandbox ?? null;
    // A sandboxed instance is reached through its network helper's forward, on the host's loopback.
    this.host = this.sandbox ? FORWARD_HOST : (options.host ?? '127.0.0.1');
    this.backoff = options.restartBackoffMs ?? 1000;
    this.maxBackoff = options.maxBackoffMs ?? 30_000;
    this.grace = options.stopGraceMs ?? 10_000;
    this.stableAfter = options.stableAfterMs ?? 60_000;
    this.baseEnv = options.baseEnv ?? defaultBaseEnv(this.sandbox !== null);
    // Instances' output is theirs: only the platform reads these files.
    mkdirSync(options.logDir, { recursive: true, mode: 0o700 });
    chmodSync(options.logDir, 0o700);
  }

  get sandboxed(): boolean {
    return this.sandbox !== null;
  }

  /** Fails closed: nothing runs unconfined when the sandbox cannot be set up. */
  private async sandboxFor(request: {
    applicationId: string | undefined;
    name: string;
    command: string;
    view: SandboxView;
    limits?: InstanceSpec['limits'];
    forward?: SandboxNetwork['forward'];
  }): Promise<PreparedSandbox | null> {
    if (!this.sandbox) return null;
    try {
      await this.sandbox.ready();
    } catch (err) {
      if (err instanceof SandboxUnavailable) {
        throw new Error(`Cannot run applications isolated: ${err.message}. Fix it, or set RUNTIME_ISOLATION=none (single team only)`);
      }
      throw err;
    }
    if (!request.applicationId) throw new Error('a sandboxed process needs the application it belongs to');
    return this.sandbox.prepare({
      applicationId: request.applicationId,
      name: request.name,
      command: request.command,
      view: request.view,
      ...(request.limits ? { limits: { memoryBytes: request.limits.memoryBytes, cpuMillicores: request.limits.cpuMillicores } } : {}),
      ...(request.forward ? { network: { forward: request.forward } } : {}),
    });
  }

  onChange(listener: (s: InstanceStatus) => void) {
    this.listeners.push(listener);
  }

  /** Appends to the instance's file; past the size limit the file becomes `<id>.log.1` (replacing the previous one). */
  private writeLog(inst: LocalInstance, text: string) {
    // A file that failed (a full disk) is opened again once in a while, so its lines resume when space returns.
    if (inst.log.destroyed) {
      if (Date.now() - inst.logFailedAt < LOG_REOPEN_MS) return;
      inst.log = this.openLog(inst, 'a');
    }
    inst.logBytes += Buffer.byteLength(text);
    if (inst.logBytes > (this.options.maxLogFileBytes ?? MAX_INSTANCE_LOG_BYTES)) {
      const path = join(this.options.logDir, `${inst.spec.id}.log`);
      inst.log.end();
      try {
        renameSync(path, `${path}.1`);
      } catch {
        /* the next file starts anyway */
      }
      inst.log = this.openLog(inst, 'w');
      inst.logBytes = Buffer.byteLength(text);
    }
    inst.log.write(text);
  }

  /**
   * The instance's output file. A write that fails (the disk is full) never stops the instance: its
   * lines still reach the log store; the failure is counted and the file reopened later.
   */
  private openLog(inst: LocalInstance, flags: 'a' | 'w'): WriteStream {
    const stream = createWriteStream(join(this.options.logDir, `${inst.spec.id}.log`), { flags, mode: 0o600 });
    stream.on('error', (err) => {
      inst.logFailedAt = Date.now();
      if (isDiskFull(err)) countDiskFull('instance_log');
    });
    return stream;
  }

  onOutput(listener: (output: InstanceOutput) => void) {
    this.outputListeners.push(listener);
  }

  private emit(inst: LocalInstance) {
    const snapshot = { ...inst.status };
    for (const l of this.listeners) {
      try {
        l(snapshot);
      } catch {
        /* a listener's failure must not break supervision */
      }
    }
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.shuttingDown) throw new Error('runtime is shutting down');
    if (this.instances.has(spec.id)) throw new Error(`instance ${spec.id} already exists`);
    let port: number | null = null;
    if (spec.listen) {
      do port = await freePort(this.host);
      while (this.usedPorts.has(port));
      this.usedPorts.add(port);
    }
    let sandbox: PreparedSandbox | null;
    try {
      sandbox = await this.sandboxFor({
        applicationId: spec.labels.applicationId,
        name: `instance-${spec.id}`,
        command: spec.command,
        view: sandboxView(spec),
        limits: spec.limits,
        // Inside its own network namespace the instance listens on the same number (its PORT).
        ...(port !== null ? { forward: { hostPort: port, port } } : {}),
      });
    } catch (err) {
      if (port !== null) this.usedPorts.delete(port);
      throw err;
    }
    const inst: LocalInstance = {
      spec,
      status: {
        id: spec.id,
        labels: spec.labels,
        state: 'starting',
        pid: null,
        host: spec.listen ? this.host : null,
        port,
        restartCount: 0,
        lastExit: null,
        startedAt: new Date(),
      },
      child: null,
      stopping: false,
      consecutiveCrashes: 0,
      lastSpawn: 0,
      restartTimer: null,
      exited: Promise.resolve(),
      log: null as unknown as WriteStream, // opened just below, once the instance exists
      logBytes: 0,
      logFailedAt: 0,
      cpu: null,
      sandbox,
      oomKills: 0,
    };
    inst.log = this.openLog(inst, 'a');
    this.instances.set(spec.id, inst);
    this.spawnInstance(inst);
    return { ...inst.status };
  }

  private spawnInstance(inst: LocalInstance) {
    const { spec } = inst;
    const env: Record<string, string> = { ...this.baseEnv, ...spec.env, [INSTANCE_ID_VARIABLE]: spec.id };
    if (inst.status.port !== null) env.PORT = String(inst.status.port);
    const [file, args] = inst.sandbox ? [inst.sandbox.file, inst.sandbox.args] : ['sh', ['-c', spec.command]];
    const child = spawn(file, args, {
      cwd: spec.artifactPath,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...Array<'pipe'>(inst.sandbox ? CONTROL_PIPES : 0).fill('pipe')],
    });
    inst.child = child;
    const control = inst.sandbox ? controlSandbox(child, inst.sandbox) : null;
    inst.lastSpawn = Date.now();
    const record = (stream: 'stdout' | 'stderr', line: string) => {
      const at = new Date();
      this.writeLog(inst, `${at.toISOString()} ${spec.labels.processType}.${spec.labels.ordinal} ${line}\n`);
      for (const l of this.outputListeners) {
        try {
          l({ instanceId: spec.id, labels: spec.labels, stream, line, at });
        } catch {
          /* never break the capture */
        }
      }
    };
    // One budget for both streams: a flood is dropped before it is scrubbed, stored or streamed.
    const gate = new OutputRateGate(this.options.outputRate ?? DEFAULT_OUTPUT_RATE, (notice) => record('stderr', notice));
    // stdout and stderr are split into lines separately, so each line keeps its stream.
    const capture = (stream: 'stdout' | 'stderr') =>
      new LineScrubber(
        spec.secrets,
        (line) => record(stream, line),
        undefined,
        (line) => gate.admit(line),
      );
    const stdout = capture('stdout');
    const stderr = capture('stderr');
    const out = {
      write: (c: Buffer | string) => stderr.write(c),
      end: () => {
        stdout.end();
        stderr.end();
        gate.close();
      },
    };
    // While the second's budget is spent, whole chunks are dropped unsplit (a flood costs little to ignore).
    const feed = (scrubber: LineScrubber) => (c: Buffer) => {
      if (!gate.closed()) return scrubber.write(c);
      scrubber.discardPartial();
      gate.drop(countLines(c), c.length);
    };
    child.stdout!.on('data', feed(stdout));
    child.stderr!.on('data', feed(stderr));
    control?.ready.catch((err: Error) => out.write(`sandbox failed to start: ${err.message}\n`));
    // Without its network helper nobody reaches the instance: a crash, so it restarts with a new one.
    void control?.networkLost.then((why) => {
      out.write(`the instance's network ended (${why}); restarting it\n`);
      killGroup(child.pid, 'SIGKILL');
    });
    inst.exited = new Promise((resolve) => {
      let ended = false;
      const end = (code: number | null, signal: NodeJS.Signals | null) => {
        if (ended) return;
        ended = true;
        control?.release();
        out.end();
        killGroup(child.pid, 'SIGKILL'); // children the shell left behind would hold the port
        void this.outOfMemory(inst).then((oom) => {
          this.onExit(inst, child, exitReason(code, signal, oom, spec.limits));
          resolve();
        });
      };
      child.on('error', (err) => {
        out.write(`failed to start: ${err.message}\n`);
        // A process that never started (e.g. its directory is gone) emits no 'close'.
        if (child.pid === undefined) end(127, null);
      });
      child.on('close', end);
    });
    inst.status = { ...inst.status, state: 'starting', pid: child.pid ?? null, startedAt: new Date() };
    this.emit(inst);
  }

  /** Whether the kernel's OOM killer struck the instance's control group since the last look. */
  private async outOfMemory(inst: LocalInstance): Promise<boolean> {
    if (!inst.sandbox) return false;
    const kills = await inst.sandbox.cgroup.oomKills();
    const struck = kills > inst.oomKills;
    inst.oomKills = kills;
    return struck;
  }

  private onExit(inst: LocalInstance, child: ChildProcess, reason: string) {
    if (inst.child !== child) return;
    inst.child = null;
    inst.cpu = null;
    if (inst.stopping || this.shuttingDown) {
      inst.status = { ...inst.status, state: 'stopped', pid: null };
      this.emit(inst);
      return;
    }
    const ranFor = Date.now() - inst.lastSpawn;
    inst.consecutiveCrashes = ranFor >= this.stableAfter ? 1 : inst.consecutiveCrashes + 1;
    const delay = Math.min(this.backoff * 2 ** (inst.consecutiveCrashes - 1), this.maxBackoff);
    inst.status = { ...inst.status, state: 'crashed', pid: null, lastExit: reason };
    this.emit(inst);
    inst.restartTimer = setTimeout(() => {
      inst.restartTimer = null;
      if (inst.stopping || this.shuttingDown || !this.instances.has(inst.spec.id)) return;
      inst.status = { ...inst.status, restartCount: inst.status.restartCount + 1 };
      this.spawnInstance(inst);
    }, delay);
  }

  async stop(id: string): Promise<void> {
    const inst = this.instances.get(id);
    if (!inst) return;
    inst.stopping = true;
    if (inst.restartTimer) clearTimeout(inst.restartTimer);
    const child = inst.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      killGroup(child.pid, 'SIGTERM');
      const killer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), this.grace);
      await inst.exited;
      clearTimeout(killer);
    } else if (inst.status.state !== 'stopped') {
      inst.status = { ...inst.status, state: 'stopped', pid: null };
      this.emit(inst);
    }
    inst.log.end();
    await inst.sandbox?.cgroup.remove();
    if (inst.status.port !== null) this.usedPorts.delete(inst.status.port);
    this.instances.delete(id);
  }

  status(id: string): InstanceStatus | undefined {
    const inst = this.instances.get(id);
    return inst ? { ...inst.status } : undefined;
  }

  list(): InstanceStatus[] {
    return [...this.instances.values()].map((i) => ({ ...i.status }));
  }

  async usage(): Promise<Map<string, ResourceUsage>> {
    const running = [...this.instances.values()].filter((i) => i.child?.pid);
    const readings = await readProcessGroups(running.map((i) => i.child!.pid!));
    const now = Date.now();
    const result = new Map<string, ResourceUsage>();
    for (const inst of running) {
      const r = readings.get(inst.child!.pid!);
      if (!r) continue;
      // Average since the previous reading; the first one averages over the process's life.
      const cpuMillicores = inst.cpu
        ? ((r.cpuSeconds - inst.cpu.seconds) / Math.max(0.001, (now - inst.cpu.at) / 1000)) * 1000
        : (r.cpuSeconds / r.ageSeconds) * 1000;
      inst.cpu = { seconds: r.cpuSeconds, at: now };
      result.set(inst.spec.id, { cpuMillicores: Math.max(0, Math.round(cpuMillicores)), memoryBytes: r.memoryBytes });
    }
    return result;
  }

  async runOnce(spec: OneOffSpec): Promise<OneOffResult> {
    const sandbox = await this.sandboxFor({
      applicationId: spec.applicationId,
      name: `one-off-${uuidv7()}`,
      command: spec.command,
      view: sandboxView(spec),
      limits: spec.limits,
    });
    try {
      const result = await runOneOff(spec, this.baseEnv, this.oneOffs, sandbox);
      if (sandbox && (await sandbox.cgroup.oomKills()) > 0) return { ...result, reason: exitReason(null, null, true, spec.limits) };
      return result;
    } finally {
      await sandbox?.cgroup.remove();
    }
  }

  async reap(leftovers: LeftoverInstance[]): Promise<void> {
    for (const { id, pid } of leftovers) {
      if (!pid || this.instances.has(id)) continue;
      // Only a process that carries the instance's own id is ours: a reused pid is left alone.
      const env = await processEnvironment(pid);
      if (env?.includes(`${INSTANCE_ID_VARIABLE}=${id}`)) killGroup(pid, 'SIGKILL');
    }
    // Their control groups empty once the sandboxes are gone (bubblewrap dies with its launcher).
    if (this.sandbox) for (const { id } of leftovers) if (!this.instances.has(id)) await this.sandbox.discard(`instance-${id}`);
    // Their network helpers outlive them (they hold host ports): end those whose sandbox is gone.
    await this.sandbox?.endLeftoverNetworks();
  }

  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const child of this.oneOffs) killGroup(child.pid, 'SIGKILL');
    await Promise.all([...this.instances.keys()].map((id) => this.stop(id)));
  }
}
