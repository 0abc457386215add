/**
 * The runtime port: how the platform runs a release's processes, independent of where
 * they run. The local driver (`local/`) spawns them on this machine; a Kubernetes driver
 * or a driver that runs processes from an image's root filesystem implements the same
 * interface. Drivers know nothing about the database: `RuntimeService` records what they
 * report in the `instances` table and decides health and routing.
 */

/** Lifecycle as a driver reports it; `healthy` is set by the platform's health check. */
export type InstanceState = 'starting' | 'healthy' | 'running' | 'crashed' | 'stopped';

/** Labels a driver keeps with an instance (a Kubernetes driver would put them on the pod). */
export interface InstanceLabels {
  applicationId: string;
  environmentId: string;
  releaseId: string;
  deploymentId: string;
  processType: string;
  ordinal: number;
}

/** Limits of the instance's pod class; the sandboxed local driver enforces them with cgroups. */
export interface InstanceLimits {
  cpuMillicores: number;
  memoryBytes: number;
  /** The pod class's name, for crash reasons (`OOM: exceeded 384 MiB of m1.small`). */
  podClass?: string;
}

/** An image's unpacked root file system the process runs in (Dockerfile builds), instead of the host's. */
export interface ProcessRoot {
  rootfs: string;
  workdir: string;
  /** The image's numeric USER (what the process sees itself as); null: root inside. */
  user: { uid: number; gid: number } | null;
}

export interface InstanceSpec {
  /** Unique id chosen by the platform (the `instances` row id). */
  id: string;
  labels: InstanceLabels;
  /** Shell command line (a Procfile entry), run with `sh -c`. */
  command: string;
  /** The release's artifact: where the command runs (a source snapshot or an image root). */
  artifactPath: string;
  /** The release's frozen configuration plus the process's own environment (no PORT). */
  env: Record<string, string>;
  /** A web process: the driver gives it a port and sets `PORT`. */
  listen: boolean;
  /** Values that must never appear in captured output. */
  secrets: string[];
  limits?: InstanceLimits;
  /** Set by the image-root driver for a sandboxing driver: run inside this root file system. */
  root?: ProcessRoot;
  /** Set by the image-root driver (the image's EXPOSE): the port a web process listens on inside its sandbox, its PORT. */
  listenPort?: number;
  /** Host directories bound read-write at `target` inside the sandbox (a volume's mounted disk). */
  mounts?: Array<{ source: string; target: string }>;
}

export interface InstanceStatus {
  id: string;
  labels: InstanceLabels;
  state: Exclude<InstanceState, 'healthy'>;
  pid: number | null;
  /** Where a web instance listens (reachable from the router). */
  host: string | null;
  port: number | null;
  /** How many times the driver restarted it after a crash. */
  restartCount: number;
  /** Exit code or signal of the last crash, for error details. */
  lastExit: string | null;
  startedAt: Date;
}

export interface ResourceUsage {
  /** Average CPU since the previous reading, in millicores (1000 = one core busy). */
  cpuMillicores: number;
  /** Resident memory, in bytes. */
  memoryBytes: number;
  /** The memory limit the instance was started with (what kills it), when it has one. */
  memoryLimitBytes?: number;
}

/** A one-off process: `release`, `postdeploy`. */
export interface OneOffSpec {
  /** Whose sandbox user runs it (required by a sandboxing driver). */
  applicationId?: string;
  /** Its environment: the add-ons attached there are reachable from it (a release command's migrations). */
  environmentId?: string;
  command: string;
  artifactPath: string;
  env: Record<string, string>;
  secrets: string[];
  timeoutMs: number;
  /** Ends the process early (platform shutdown). */
  signal?: AbortSignal;
  /** Each line of output, already scrubbed of secrets. */
  onOutput: (line: string) => void;
  limits?: InstanceLimits;
  root?: ProcessRoot;
  /** Attached to a caller (`slipway run`): its standard input and raw output instead of log lines. */
  attach?: AttachedStdio;
  /** The process type's volumes, at their paths (a one-off run shares them with the running instance). */
  mounts?: Array<{ source: string; target: string }>;
}

/** A terminal's size in characters. */
export interface TerminalSize {
  rows: number;
  cols: number;
}

/**
 * The caller's side of an attached one-off process. Output is scrubbed of secrets but not cut
 * into lines; `write` answering false pauses the process's output until `drained` calls back
 * (the caller's connection is the buffer's bound).
 */
export interface AttachedStdio {
  stdin: NodeJS.ReadableStream;
  /** Run under a pseudo-terminal of this size and TERM (stdout and stderr then arrive as one stream). */
  tty?: TerminalSize & { term: string };
  write(stream: 'stdout' | 'stderr', bytes: Buffer): boolean;
  drained(resume: () => void): void;
}

export interface OneOffResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Why it ended when the exit code does not say (e.g. `OOM: exceeded 384 MiB of m1.small`). */
  reason?: string;
}

/** A command run inside a running instance (`slipway exec`): an interactive shell when `command` is null. */
export interface ExecRequest {
  command: string | null;
  /** Under a pseudo-terminal of this size and TERM (its output then arrives on stdout alone). */
  tty?: TerminalSize & { term: string };
}

/** The caller's side of a command run inside an instance; its output is scrubbed of the instance's secrets. */
export interface ExecProcess {
  stdin: NodeJS.WritableStream;
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  /** A terminal's new size (ignored without one). */
  resize(size: TerminalSize): void;
  kill(): void;
  exited: Promise<{ exitCode: number | null; signal: string | null }>;
}

/** A process a previous platform process started and may have left behind. */
export interface LeftoverInstance {
  id: string;
  pid: number | null;
}

/** What a previous platform process recorded of an instance it started, to take it over. */
export interface AdoptionRecord {
  id: string;
  pid: number | null;
  /** The process's start time (/proc/<pid>/stat): with the pid, it tells the instance from a reused pid. */
  startTicks: string | null;
  port: number | null;
  restartCount: number;
  lastExit: string | null;
}

/** One line an instance wrote, already scrubbed of its secret values. */
export interface InstanceOutput {
  instanceId: string;
  labels: InstanceLabels;
  stream: 'stdout' | 'stderr';
  line: string;
  at: Date;
}

export interface RuntimeDriver {
  readonly name: string;
  /** Whether processes run in a sandbox (then an image's root is passed as `root`, not chrooted into). */
  readonly sandboxed?: boolean;
  /** Starts one instance; resolves once it is launched (not yet healthy). */
  start(spec: InstanceSpec): Promise<InstanceStatus>;
  /** Stops an instance gracefully (TERM, then KILL after the grace period); no restart follows. */
  stop(id: string): Promise<void>;
  status(id: string): InstanceStatus | undefined;
  list(): InstanceStatus[];
  /** CPU and memory per running instance id. */
  usage(): Promise<Map<string, ResourceUsage>>;
  /** Runs a one-off process to completion (or until its timeout). */
  runOnce(spec: OneOffSpec): Promise<OneOffResult>;
  /** Called on every state change (start, crash, restart, stop). */
  onChange(listener: (status: InstanceStatus) => void): void;
  /** Called with every line of every instance's output (scrubbed). */
  onOutput(listener: (output: InstanceOutput) => void): void;
  /** The TCP ports a running instance listens on, and what was looked at (for a failed health check's report). */
  listening?(id: string): Promise<{ ports: number[] | null; checked: string }>;
  /** Runs a command inside a running instance (its user, namespaces and limits); rejects when it is not running here. */
  exec?(id: string, request: ExecRequest): Promise<ExecProcess>;
  /** Ends processes a dead platform process left running (never unrelated ones). */
  reap(leftovers: LeftoverInstance[]): Promise<void>;
  /**
   * Drivers whose instances outlive the platform process (the local one, through shims):
   * whether one still runs as recorded, taking it over, its start time for the record, and
   * letting go of all of them without stopping them.
   */
  adoptable?(record: AdoptionRecord): Promise<boolean>;
  adopt?(spec: InstanceSpec, record: AdoptionRecord): Promise<InstanceStatus | null>;
  startTicksOf?(id: string): string | null;
  detach?(): Promise<void>;
  /** Stops everything this driver started. */
  shutdown(): Promise<void>;
}
