import type { ChildProcess } from 'node:child_process';
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
  type SandboxControl,
  type SandboxNetwork,
  type SandboxView,
} from '../../sandbox/index.js';
import type {
  InstanceOutput,
  InstanceSpec,
  InstanceStatus,
  AdoptionRecord,
  LeftoverInstance,
  OneOffResult,
  OneOffSpec,
  ResourceUsage,
  RuntimeDriver,
  ExecProcess,
  ExecRequest,
} from '../port.js';
import { LineScrubber } from '../scrub.js';
import { runOneOff } from './one-off.js';
import { ExecRefused, execInInstance } from './instance-exec.js';
import { underTerminal } from './terminal-command.js';
import { endsMidLine, lineStarts } from './line-starts.js';
import { DEFAULT_OUTPUT_RATE, OutputRateGate, type OutputRate } from './output-rate.js';
import { freePort, killGroup } from './process-group.js';
import { processesCarrying, readProcessGroups } from './proc-stats.js';
import { cgroupProcesses, groupProcesses, listeningPorts, type ListeningReport } from './listening-ports.js';
import {
  connectShim,
  INSTANCE_ID_VARIABLE,
  launchShim,
  processStartTicks,
  shimListening,
  shimSocketPath,
  type ShimConnection,
  type ShimEvents,
} from './shim-client.js';
import { ADOPTED_SHIM_PROTOCOLS, LINE_CUTTING_SHIM_PROTOCOL } from './shim-protocol.js';

export { INSTANCE_ID_VARIABLE };

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
  /** Where the instances' shims listen (default: `<logDir>/../shims`, 0700). */
  shimDir?: string;
  /** Host loopback ports of the add-ons attached to an application environment: only its sandboxes get them. */
  addonPorts?: (applicationId: string, environmentId: string | undefined) => Promise<number[]>;
}

/** How long a just launched shim may take to listen. */
const SHIM_CONNECT_MS = 10_000;
/** How long an ended instance's shim keeps its exit for a platform that is away. */
const SHIM_LINGER_MS = 60_000;

interface LocalInstance {
  spec: InstanceSpec;
  status: InstanceStatus;
  /** The running attempt (a token compared on exit), or null between attempts. */
  attempt: object | null;
  /** The instance's process (group leader), once its shim said which. */
  pid: number | null;
  /** Its process's start time (/proc/<pid>/stat), recorded with the pid. */
  startTicks: string | null;
  /** The connection to its shim (the instance runs without it; it only carries output and the exit). */
  connection: ShimConnection | null;
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
  /** Logs the rate gate's count of this second's dropped output now (this process lets go of the instance). */
  reportDropped: () => void;
}

/** What follows an instance's shim: its output pipeline and how its end is handled. */
interface Follow {
  inst: LocalInstance;
  control: SandboxControl | null;
  /** A previous platform process started it: its network helper is not ours to stop directly. */
  adopted: boolean;
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
function sandboxView(spec: { artifactPath: string; root?: InstanceSpec['root']; mounts?: InstanceSpec['mounts'] }): SandboxView {
  const mounts = spec.mounts?.length ? { mounts: spec.mounts } : {};
  if (spec.root)
    return { cwd: spec.root.workdir, writable: [], root: spec.root.rootfs, innerUser: spec.root.user ?? { uid: 0, gid: 0 }, ...mounts };
  return { cwd: spec.artifactPath, writable: [spec.artifactPath], ...mounts };
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

/** How an instance ended, as a phrase after its name: `exited with code 1`, `was ended by signal SIGKILL`. */
export function exitPhrase(reason: string): string {
  const code = /^exit code (\d+)$/.exec(reason);
  if (code) return `exited with code ${code[1]}`;
  const signal = /^signal (\S+)$/.exec(reason);
  if (signal) return `was ended by signal ${signal[1]}`;
  return `ended (${reason})`;
}

const formatDelay = (ms: number) => (ms < 1000 ? `${ms}ms` : `${Math.round(ms / 100) / 10}s`);

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
  /** Letting go of the instances, which keep running (detach). */
  private detaching = false;
  private readonly shimDir: string;
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
    // The shims' sockets carry instances' raw output: only the platform (root) may connect.
    this.shimDir = options.shimDir ?? join(options.logDir, '..', 'shims');
    mkdirSync(this.shimDir, { recursive: true, mode: 0o700 });
    chmodSync(this.shimDir, 0o700);
    shimSocketPath(this.shimDir, '00000000-0000-0000-0000-000000000000'); // a DATA_DIR too long for sockets fails at start
  }

  get sandboxed(): boolean {
    return this.sandbox !== null;
  }

  /** Fails closed: nothing runs unconfined when the sandbox cannot be set up. */
  private async sandboxFor(request: {
    applicationId: string | undefined;
    environmentId?: string | undefined;
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
    const addonPorts = (await this.options.addonPorts?.(request.applicationId, request.environmentId)) ?? [];
    return this.sandbox.prepare({
      applicationId: request.applicationId,
      name: request.name,
      command: request.command,
      view: request.view,
      ...(request.limits ? { limits: { memoryBytes: request.limits.memoryBytes, cpuMillicores: request.limits.cpuMillicores } } : {}),
      network: {
        ...(request.forward ? { forward: request.forward } : {}),
        ...(addonPorts.length ? { hostLoopbackPorts: addonPorts } : {}),
      },
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
        environmentId: spec.labels.environmentId,
        name: `instance-${spec.id}`,
        command: spec.command,
        view: sandboxView(spec),
        limits: spec.limits,
        // Inside its own network namespace the instance listens on the same number (its PORT).
        // An image's EXPOSE port (listenPort) is where the host's port is forwarded instead.
        ...(port !== null ? { forward: { hostPort: port, port: (this.sandbox && spec.listenPort) || port } } : {}),
      });
    } catch (err) {
      if (port !== null) this.usedPorts.delete(port);
      throw err;
    }
    const inst = this.newInstance(spec, port, sandbox);
    this.instances.set(spec.id, inst);
    // Resolves once its shim says which process it runs (or the attempt failed and counts as a crash).
    await this.spawnInstance(inst);
    return { ...inst.status };
  }

  private newInstance(spec: InstanceSpec, port: number | null, sandbox: PreparedSandbox | null): LocalInstance {
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
      attempt: null,
      pid: null,
      startTicks: null,
      connection: null,
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
      reportDropped: () => {},
    };
    inst.log = this.openLog(inst, 'a');
    return inst;
  }

  private shimSettings(inst: LocalInstance) {
    const { spec } = inst;
    const env: Record<string, string> = { ...this.baseEnv, ...spec.env, [INSTANCE_ID_VARIABLE]: spec.id };
    if (inst.status.port !== null) env.PORT = String((inst.sandbox && spec.listenPort) || inst.status.port);
    const [file, args] = inst.sandbox ? [inst.sandbox.file, inst.sandbox.args] : ['sh', ['-c', spec.command]];
    return {
      id: spec.id,
      file,
      args,
      cwd: spec.artifactPath,
      env,
      socket: shimSocketPath(this.shimDir, spec.id),
      // A reader that comes back gets at most one second's output budget at once (the rest is dropped and counted).
      bufferBytes: Math.max(64 * 1024, (this.options.outputRate ?? DEFAULT_OUTPUT_RATE).bytesPerSecond),
      controlFds: inst.sandbox ? CONTROL_PIPES : 0,
      lingerMs: SHIM_LINGER_MS,
    };
  }

  /** Starts the instance under its own shim (it outlives this process) and follows it. */
  private spawnInstance(inst: LocalInstance): Promise<ShimConnection | null> {
    const settings = this.shimSettings(inst);
    const shim = launchShim(settings, settings.controlFds);
    const control = inst.sandbox ? controlSandbox(shim, inst.sandbox) : null;
    let shimGone = false;
    shim.once('exit', () => (shimGone = true));
    inst.lastSpawn = Date.now();
    inst.status = { ...inst.status, state: 'starting', pid: null, startedAt: new Date() };
    return this.follow({ inst, control, adopted: false }, (events) =>
      connectShim(settings.socket, events, Date.now() + SHIM_CONNECT_MS, () => shimGone).catch((err: Error) => {
        // Unreachable, it must not run unsupervised (a sandbox dies with its shim).
        shim.kill('SIGKILL');
        throw err;
      }),
    );
  }

  /**
   * Follows an instance through its shim: output through the budget and the scrubber into its
   * file and the listeners, its end into a restart (or stop). Resolves with the connection, or
   * null when the shim could not be reached (the attempt then ends as a crash).
   */
  private follow(
    { inst, control, adopted }: Follow,
    connect: (events: ShimEvents) => Promise<ShimConnection>,
    accept: (connection: ShimConnection) => boolean = () => true,
  ): Promise<ShimConnection | null> {
    const { spec } = inst;
    const attempt = {};
    inst.attempt = attempt;
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
    inst.reportDropped = () => gate.close();
    // stdout and stderr are split into lines separately, so each line keeps its stream.
    const capture = (stream: 'stdout' | 'stderr') =>
      new LineScrubber(
        spec.secrets,
        (line) => record(stream, line),
        undefined,
        (line, continuing) => gate.admit(line, continuing),
      );
    const scrubbers = { stdout: capture('stdout'), stderr: capture('stderr') };
    const midLine = { stdout: false, stderr: false };
    let legacyShim = false;
    /** Forgets both streams' unfinished lines and skips their rest: what a protocol-2 shim hands on there may be cut. */
    const skipUnfinishedLines = () => Object.values(scrubbers).forEach((scrubber) => scrubber.discardPartial());
    // The platform's own lines have their own scrubber: never joined to a line the instance has not finished.
    const notes = capture('stderr');
    const note = (text: string) => notes.write(text);
    let ended = false;
    let resolveExited: () => void = () => {};
    inst.exited = new Promise((resolve) => (resolveExited = resolve));
    const end = (reason: string | null, code: number | null, signal: NodeJS.Signals | null) => {
      if (ended) return;
      ended = true;
      control?.release();
      // Ended by anything but the instance's own exit, an unfinished line may have lost its rest: it ends cut.
      scrubbers.stdout.end(reason !== null);
      scrubbers.stderr.end(reason !== null);
      if (reason) note(`${reason}\n`);
      notes.end();
      gate.close();
      inst.connection?.detach();
      inst.connection = null;
      killGroup(inst.pid, 'SIGKILL'); // children the shell left behind would hold the port
      // A previous platform process's network helper outlives the sandbox it served: ended before
      // a restart's new helper needs the same host port.
      const port = inst.status.port;
      const swept = adopted && port !== null ? this.sandbox?.endNetworkForwarding(port).catch(() => {}) : undefined;
      void Promise.resolve(swept)
        .then(() => this.outOfMemory(inst))
        .then((oom) => {
          this.onExit(inst, attempt, reason && code === null && signal === null ? reason : exitReason(code, signal, oom, spec.limits));
          resolveExited();
        });
    };
    const events: ShimEvents = {
      // While the second's budget is spent, whole chunks are dropped unsplit (a flood costs little to ignore).
      // Counted in lines where they begin (line-starts.ts), with the partial line a drop forgets.
      output: (stream, chunk) => {
        const continuesLine = midLine[stream];
        midLine[stream] = endsMidLine(chunk, continuesLine);
        if (!gate.closed()) return scrubbers[stream].write(chunk);
        const forgotStart = scrubbers[stream].discardPartial(!midLine[stream]);
        gate.drop(lineStarts(chunk, continuesLine) + (forgotStart ? 1 : 0), chunk.length);
      },
      dropped: ({ lines, bytes }) => {
        // A protocol-2 shim drops chunks uncut: an unfinished line's rest (and the next line's start) may be gone.
        if (legacyShim) skipUnfinishedLines();
        record('stderr', `[slipway: ${lines} lines (${bytes} bytes) dropped: output waiting for the platform exceeded its buffer]`);
      },
      exit: (code, signal, lost) => end(lost ? 'the instance supervisor ended unexpectedly' : null, code, signal),
    };
    control?.ready.catch((err: Error) => note(`sandbox failed to start: ${err.message}\n`));
    return connect(events).then(
      (connection) => {
        if (ended || this.detaching) {
          // Letting go of every instance (a stop that keeps them serving), one reached only now: an adopted one
          // stays for the next process; one this process was starting never served and has no pid on record
          // (nobody could adopt it), so it ends here and the next process starts it again.
          if (this.detaching && !adopted && !ended) killGroup(connection.hello.pid, 'SIGKILL');
          connection.detach();
          return null;
        }
        if (!accept(connection)) {
          // Not the process on record: nothing of it is ours to follow or stop.
          connection.detach();
          ended = true;
          inst.attempt = null;
          resolveExited();
          return null;
        }
        legacyShim = connection.hello.protocol < LINE_CUTTING_SHIM_PROTOCOL;
        // A protocol-2 shim hands an adopter the rest of a line its previous reader held the start of: skipped.
        if (legacyShim && adopted) skipUnfinishedLines();
        connection.accept();
        inst.connection = connection;
        inst.pid = connection.hello.pid;
        inst.startTicks = connection.hello.startTicks;
        if (inst.stopping || this.shuttingDown) killGroup(inst.pid, 'SIGTERM');
        // Without its network helper nobody reaches the instance: a crash, so it restarts with a new one.
        void control?.networkLost.then((why) => {
          note(`the instance's network ended (${why}); restarting it\n`);
          killGroup(inst.pid, 'SIGKILL');
        });
        if (!adopted) {
          inst.status = { ...inst.status, state: 'starting', pid: inst.pid };
          this.emit(inst);
        }
        return connection;
      },
      (err: Error) => {
        end(`failed to start: ${err.message}`, null, null);
        return null;
      },
    );
  }

  /** Whether the kernel's OOM killer struck the instance's control group since the last look. */
  private async outOfMemory(inst: LocalInstance): Promise<boolean> {
    if (!inst.sandbox) return false;
    const kills = await inst.sandbox.cgroup.oomKills();
    const struck = kills > inst.oomKills;
    inst.oomKills = kills;
    return struck;
  }

  private onExit(inst: LocalInstance, attempt: object, reason: string) {
    if (inst.attempt !== attempt) return;
    inst.attempt = null;
    inst.pid = null;
    inst.startTicks = null;
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
    // The crash shows in the application's own log stream, where its output is read.
    this.platformLine(
      inst,
      `${inst.spec.labels.processType}.${inst.spec.labels.ordinal} ${exitPhrase(reason)}, restarting in ${formatDelay(delay)}`,
    );
    this.emit(inst);
    inst.restartTimer = setTimeout(() => {
      inst.restartTimer = null;
      if (inst.stopping || this.shuttingDown || !this.instances.has(inst.spec.id)) return;
      inst.status = { ...inst.status, restartCount: inst.status.restartCount + 1 };
      void this.spawnInstance(inst);
    }, delay);
  }

  /** A line of the platform's in an instance's output (its file and the listeners), marked as such. */
  private platformLine(inst: LocalInstance, text: string) {
    const at = new Date();
    const line = `[slipway] ${text}`;
    this.writeLog(inst, `${at.toISOString()} ${inst.spec.labels.processType}.${inst.spec.labels.ordinal} ${line}\n`);
    for (const l of this.outputListeners) {
      try {
        l({ instanceId: inst.spec.id, labels: inst.spec.labels, stream: 'stderr', line, at });
      } catch {
        /* never break supervision */
      }
    }
  }

  /**
   * The TCP ports a running instance's processes listen on, read in its own network namespace:
   * the processes of its control group (sandboxed) or of its process group.
   */
  async listening(id: string): Promise<ListeningReport> {
    const inst = this.instances.get(id);
    if (!inst?.pid) return { ports: null, checked: 'the process was not running when checked' };
    const procsFile = inst.sandbox?.cgroup.procsFiles[0];
    const pids = procsFile ? await cgroupProcesses(procsFile) : await groupProcesses(inst.pid);
    if (!pids || pids.length === 0) return { ports: null, checked: 'its processes could not be listed' };
    const where = inst.sandbox ? "in its sandbox's network namespace" : 'on this host';
    return { ports: await listeningPorts(pids), checked: `TCP sockets its ${pids.length} process(es) listen on ${where}` };
  }

  async stop(id: string): Promise<void> {
    const inst = this.instances.get(id);
    if (!inst) return;
    inst.stopping = true;
    if (inst.restartTimer) clearTimeout(inst.restartTimer);
    if (inst.attempt) {
      // A pid not known yet (the shim is being reached) is signalled as soon as it is.
      killGroup(inst.pid, 'SIGTERM');
      const killer = setTimeout(() => killGroup(inst.pid, 'SIGKILL'), this.grace);
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

  /** The process start time of a running instance (recorded with its pid, so a reused pid is never taken for it). */
  startTicksOf(id: string): string | null {
    return this.instances.get(id)?.startTicks ?? null;
  }

  async usage(): Promise<Map<string, ResourceUsage>> {
    const running = [...this.instances.values()].filter((i) => i.pid);
    const readings = await readProcessGroups(running.map((i) => i.pid!));
    const now = Date.now();
    const result = new Map<string, ResourceUsage>();
    for (const inst of running) {
      const r = readings.get(inst.pid!);
      if (!r) continue;
      // Average since the previous reading; the first one averages over the process's life.
      const cpuMillicores = inst.cpu
        ? ((r.cpuSeconds - inst.cpu.seconds) / Math.max(0.001, (now - inst.cpu.at) / 1000)) * 1000
        : (r.cpuSeconds / r.ageSeconds) * 1000;
      inst.cpu = { seconds: r.cpuSeconds, at: now };
      result.set(inst.spec.id, {
        cpuMillicores: Math.max(0, Math.round(cpuMillicores)),
        memoryBytes: r.memoryBytes,
        ...(inst.spec.limits ? { memoryLimitBytes: inst.spec.limits.memoryBytes } : {}),
      });
    }
    return result;
  }

  /** Whether a previous platform process's instance still runs as recorded (same pid, same start time, its shim listening). */
  async adoptable(record: AdoptionRecord): Promise<boolean> {
    if (this.instances.has(record.id) || !record.pid || !record.startTicks) return false;
    if (!shimListening(shimSocketPath(this.shimDir, record.id))) return false;
    return (await processStartTicks(record.pid)) === record.startTicks;
  }

  /**
   * Takes over an instance a previous platform process started (it kept running under its
   * shim): follows its output and exit again, and restarts it like any other when it crashes.
   * Resolves with its status, or null when it is not the process on record (left alone).
   */
  async adopt(spec: InstanceSpec, record: AdoptionRecord): Promise<InstanceStatus | null> {
    if (this.shuttingDown || !(await this.adoptable(record))) return null;
    if (record.port !== null && this.usedPorts.has(record.port)) return null;
    const sandbox = await this.sandboxFor({
      applicationId: spec.labels.applicationId,
      environmentId: spec.labels.environmentId,
      name: `instance-${spec.id}`,
      command: spec.command,
      view: sandboxView(spec),
      limits: spec.limits,
      ...(record.port !== null ? { forward: { hostPort: record.port, port: (this.sandbox && spec.listenPort) || record.port } } : {}),
    });
    if (record.port !== null) this.usedPorts.add(record.port);
    const inst = this.newInstance(spec, record.port, sandbox);
    // The pid becomes its own once the shim confirms it (nothing is signalled on the record's word alone).
    inst.status = { ...inst.status, pid: record.pid, restartCount: record.restartCount, lastExit: record.lastExit };
    inst.lastSpawn = Date.now();
    inst.oomKills = (await sandbox?.cgroup.oomKills()) ?? 0;
    this.instances.set(spec.id, inst);
    const socket = shimSocketPath(this.shimDir, spec.id);
    const connection = await this.follow(
      { inst, control: null, adopted: true },
      (events) => connectShim(socket, events, Date.now() + 2000),
      ({ hello }) =>
        ADOPTED_SHIM_PROTOCOLS.includes(hello.protocol) &&
        hello.id === spec.id &&
        hello.pid === record.pid &&
        hello.startTicks === record.startTicks,
    );
    // Reached while this process lets go of its instances (see follow): it stays, as recorded, for the next one.
    if (!connection && !this.detaching) {
      if (inst.attempt === null && inst.status.state === 'starting') {
        // Not ours after all: forget it without touching the process or its port's owner.
        this.instances.delete(spec.id);
        if (record.port !== null) this.usedPorts.delete(record.port);
        return null;
      }
    }
    return { ...inst.status };
  }

  /**
   * Stops following every instance and leaves them running (an upgrade or a restart of the
   * control plane that keeps serving): the next platform process adopts them.
   */
  async detach(): Promise<void> {
    this.shuttingDown = true;
    this.detaching = true;
    for (const child of this.oneOffs) killGroup(child.pid, 'SIGKILL');
    const instances = [...this.instances.values()];
    this.instances.clear();
    await Promise.all(
      instances.map(async (inst) => {
        if (inst.restartTimer) clearTimeout(inst.restartTimer);
        inst.attempt = null;
        const connection = inst.connection;
        inst.connection = null;
        // Output the shim wrote before it answered is still logged here; the rest waits for the next process.
        await connection?.release();
        inst.reportDropped();
        inst.log.end();
      }),
    );
  }

  async runOnce(spec: OneOffSpec): Promise<OneOffResult> {
    const tty = spec.attach?.tty;
    if (tty) spec = { ...spec, command: underTerminal(spec.command, tty, tty.term) };
    const sandbox = await this.sandboxFor({
      applicationId: spec.applicationId,
      environmentId: spec.environmentId,
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

  /** Runs a command inside a running instance (see instance-exec.ts): its sandbox, user, environment and limits. */
  async exec(id: string, request: ExecRequest): Promise<ExecProcess> {
    const inst = this.instances.get(id);
    if (!inst?.pid || inst.status.state === 'stopped' || inst.stopping) throw new ExecRefused('the instance is not running here');
    const { spec } = inst;
    const env: Record<string, string> = { ...this.baseEnv, ...spec.env, [INSTANCE_ID_VARIABLE]: spec.id };
    if (inst.status.port !== null) env.PORT = String(inst.status.port);
    return execInInstance(
      {
        pid: inst.pid,
        startTicks: inst.startTicks,
        sandbox: inst.sandbox,
        cwd: spec.root ? spec.root.workdir : spec.artifactPath,
        env,
        secrets: spec.secrets,
      },
      request,
    );
  }

  async reap(leftovers: LeftoverInstance[]): Promise<void> {
    // Only processes that carry a leftover instance's own id are ours (its shim and its process,
    // also when the dead platform never recorded the pid): a reused pid is left alone.
    const ids = new Set(leftovers.map((l) => l.id).filter((id) => !this.instances.has(id)));
    for (const pid of await processesCarrying(INSTANCE_ID_VARIABLE, ids)) {
      killGroup(pid, 'SIGKILL');
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone with its group */
      }
    }
    // Their control groups empty once the sandboxes are gone (bubblewrap dies with its shim).
    if (this.sandbox) for (const id of ids) await this.sandbox.discard(`instance-${id}`);
    // Their network helpers outlive them (they hold host ports): end those whose sandbox is gone.
    await this.sandbox?.endLeftoverNetworks();
  }

  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    for (const child of this.oneOffs) killGroup(child.pid, 'SIGKILL');
    await Promise.all([...this.instances.keys()].map((id) => this.stop(id)));
  }
}
