import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type {
  InstanceOutput, InstanceSpec, InstanceStatus, LeftoverInstance, OneOffResult, OneOffSpec, ResourceUsage, RuntimeDriver,
} from '../port.js';
import { LineScrubber } from '../scrub.js';
import { runOneOff } from './one-off.js';
import { freePort, killGroup } from './process-group.js';
import { processEnvironment, readProcessGroups } from './proc-stats.js';

export interface LocalDriverOptions {
  /** Loopback address instances listen on. */
  host?: string;
  /** Where each instance's output is written (`<dir>/<instance id>.log`). */
  logDir: string;
  /** First restart delay after a crash; doubles per consecutive crash up to `maxBackoffMs`. */
  restartBackoffMs?: number;
  maxBackoffMs?: number;
  /** Time between TERM and KILL when stopping. */
  stopGraceMs?: number;
  /** An instance that ran this long before crashing restarts with the first delay again. */
  stableAfterMs?: number;
  /** PATH and the like: the only parts of the platform's own environment instances see. */
  baseEnv?: Record<string, string>;
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
  /** Previous CPU reading, for the average since then. */
  cpu: { seconds: number; at: number } | null;
}

/** Platform variables never handed to applications (the database, keys) stay out by construction. */
function defaultBaseEnv(): Record<string, string> {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'HOME'];
  const env: Record<string, string> = {};
  for (const k of keep) if (process.env[k]) env[k] = process.env[k]!;
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return env;
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

  constructor(private readonly options: LocalDriverOptions) {
    this.host = options.host ?? '127.0.0.1';
    this.backoff = options.restartBackoffMs ?? 1000;
    this.maxBackoff = options.maxBackoffMs ?? 30_000;
    this.grace = options.stopGraceMs ?? 10_000;
    this.stableAfter = options.stableAfterMs ?? 60_000;
    this.baseEnv = options.baseEnv ?? defaultBaseEnv();
    mkdirSync(options.logDir, { recursive: true });
  }

  onChange(listener: (s: InstanceStatus) => void) {
    this.listeners.push(listener);
  }

  onOutput(listener: (output: InstanceOutput) => void) {
    this.outputListeners.push(listener);
  }

  private emit(inst: LocalInstance) {
    const snapshot = { ...inst.status };
    for (const l of this.listeners) {
      try { l(snapshot); } catch { /* a listener's failure must not break supervision */ }
    }
  }

  async start(spec: InstanceSpec): Promise<InstanceStatus> {
    if (this.shuttingDown) throw new Error('runtime is shutting down');
    if (this.instances.has(spec.id)) throw new Error(`instance ${spec.id} already exists`);
    let port: number | null = null;
    if (spec.listen) {
      do port = await freePort(this.host); while (this.usedPorts.has(port));
      this.usedPorts.add(port);
    }
    const inst: LocalInstance = {
      spec,
      status: {
        id: spec.id, labels: spec.labels, state: 'starting', pid: null,
        host: spec.listen ? this.host : null, port, restartCount: 0, lastExit: null, startedAt: new Date(),
      },
      child: null, stopping: false, consecutiveCrashes: 0, lastSpawn: 0, restartTimer: null,
      exited: Promise.resolve(),
      log: createWriteStream(join(this.options.logDir, `${spec.id}.log`), { flags: 'a' }),
      cpu: null,
    };
    inst.log.on('error', () => {});
    this.instances.set(spec.id, inst);
    this.spawnInstance(inst);
    return { ...inst.status };
  }

  private spawnInstance(inst: LocalInstance) {
    const { spec } = inst;
    const env: Record<string, string> = { ...this.baseEnv, ...spec.env, [INSTANCE_ID_VARIABLE]: spec.id };
    if (inst.status.port !== null) env.PORT = String(inst.status.port);
    const child = spawn('sh', ['-c', spec.command], {
      cwd: spec.artifactPath, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    inst.child = child;
    inst.lastSpawn = Date.now();
    // stdout and stderr are split into lines separately, so each line keeps its stream.
    const capture = (stream: 'stdout' | 'stderr') => new LineScrubber(spec.secrets, (line) => {
      const at = new Date();
      inst.log.write(`${at.toISOString()} ${spec.labels.processType}.${spec.labels.ordinal} ${line}\n`);
      for (const l of this.outputListeners) {
        try { l({ instanceId: spec.id, labels: spec.labels, stream, line, at }); } catch { /* never break the capture */ }
      }
    });
    const stdout = capture('stdout');
    const stderr = capture('stderr');
    const out = { write: (c: Buffer | string) => stderr.write(c), end: () => { stdout.end(); stderr.end(); } };
    child.stdout!.on('data', (c) => stdout.write(c));
    child.stderr!.on('data', (c) => stderr.write(c));
    inst.exited = new Promise((resolve) => {
      let ended = false;
      const end = (code: number | null, signal: NodeJS.Signals | null) => {
        if (ended) return;
        ended = true;
        out.end();
        killGroup(child.pid, 'SIGKILL'); // children the shell left behind would hold the port
        this.onExit(inst, child, code, signal);
        resolve();
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

  private onExit(inst: LocalInstance, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) {
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
    inst.status = { ...inst.status, state: 'crashed', pid: null, lastExit: signal ? `signal ${signal}` : `exit code ${code}` };
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
    return runOneOff(spec, this.baseEnv, this.oneOffs);
  }

  async reap(leftovers: LeftoverInstance[]): Promise<void> {
    for (const { id, pid } of leftovers) {
      if (!pid || this.instances.has(id)) continue;
      // Only a process that carries the instance's own id is ours: a reused pid is left alone.
      const env = await processEnvironment(pid);
      if (env?.includes(`${INSTANCE_ID_VARIABLE}=${id}`)) killGroup(pid, 'SIGKILL');
    }
  }

  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const child of this.oneOffs) killGroup(child.pid, 'SIGKILL');
    await Promise.all([...this.instances.keys()].map((id) => this.stop(id)));
  }
}
