import { PipelineFailure, type FailureCode } from '../failures.js';
/**
 * The application runtime port: how one deployment of a release gets running in one
 * environment, whatever runs it. The deployments module owns the records, the log and
 * the order of steps (Setup, Release, Deploy, Rollout, Done); a runtime owns how
 * processes start, become healthy, receive traffic and stop.
 *
 * Drivers: `LocalRuntime` (processes on this machine behind the built-in router, the
 * embedded default) and `KubernetesRuntime` (`RUNTIME=kubernetes`: a Deployment per
 * process type in a namespace per organization).
 */
import type { ProcessDefinitions } from '../db/schema.js';
import type { AttachedStdio, ExecProcess, ExecRequest, OneOffResult } from './port.js';
import type { DeployDiagnosis } from './diagnosis.js';

/** A pod class resolved to numbers (decisions.md): what a process may request and use. */
export interface PodResources {
  podClass: string;
  cpuRequestMillicores: number;
  cpuLimitMillicores: number;
  memoryRequestMiB: number;
  memoryLimitMiB: number;
}

/** Everything a runtime needs to run one deployment of a release in one environment. */
/** A persistent volume one process type's instance mounts (migration 0053; see docs/volumes.md). */
export interface PlanVolume {
  id: string;
  name: string;
  processType: string;
  mountPath: string;
  sizeMiB: number;
}

export interface WorkloadPlan {
  deploymentId: string;
  organization: { id: string; slug: string };
  project: { id: string; slug: string };
  application: { id: string; slug: string };
  environment: { id: string; slug: string; isProduction: boolean };
  release: { id: string; version: number; commitSha: string | null };
  image: {
    id: string;
    version: number;
    /** `org/project/app`, the image repository name. */
    repositoryName: string;
    /** A source snapshot or an unpacked image root on this machine (local runtime). */
    artifactPath: string | null;
    /** The pushed image pinned by digest, `host/org/project/app@sha256:…` (cluster runtimes). */
    registryReference: string | null;
    /** Credentials for an image deployed from another registry (IMAGE_PULL_REGISTRIES): a cluster pulls it with them. */
    pullCredentials: { host: string; username: string; password: string } | null;
  };
  /** Every process type of the release, including the one-off `release` and `postdeploy`. */
  processes: ProcessDefinitions;
  /** The frozen configuration, plain: only ever handed to processes (never logged). */
  env: Record<string, string>;
  /** Names of the variables that are secret. */
  secretNames: string[];
  /** Values to scrub from every output. */
  secrets: string[];
  /** Replicas of each long-running process type (one-offs excluded; 0 allowed). */
  formation: Record<string, number>;
  /** Resources of every process type in `processes`. */
  resources: Record<string, PodResources>;
  /** `timeoutSeconds`: how long a new web instance may take to answer (the application's `health_check_timeout`); unset: the deployment's timeout. */
  healthCheck: { path: string; host: string | null; timeoutSeconds?: number };
  timeoutSeconds: number;
  /** The stability window: seconds the new instances must keep running once healthy before traffic switches; unset: none. */
  stabilitySeconds?: number;
  /**
   * The release runs the image already serving (a configuration change): traffic switches as soon
   * as the new instances are healthy, and the previous ones stay up through the stability window,
   * taking the traffic back if a new one crashes in it. A config change is then served in about a
   * second instead of after the window (issue 35, goal 5); the crash check still holds.
   */
  switchBeforeWindow?: boolean;
  /** The public host name of the environment's web processes. */
  hostname: string;
  /** Verified custom domains of the environment (Ingress hosts with TLS on Kubernetes; the local edge reads them itself). */
  customDomains?: string[];
  /** Persistent volumes: a process type with one runs at most one instance, deployed stop-then-start. */
  volumes?: PlanVolume[];
}

/** Which application environment a reconcile is about (it may have no plan any more). */
export interface WorkloadTarget {
  applicationId: string;
  environmentId: string;
}

export interface RolloutLog {
  /** Moves the deployment to a step (recorded in `deploy_step`) with a log line. */
  step(name: 'Deploy' | 'Rollout', message: string): Promise<void>;
  /** One line of the deployment log (secrets already scrubbed by the caller's values). */
  line(text: string): void;
}

export interface OneOffOptions {
  /** Epoch milliseconds by which the process must have finished. */
  deadline: number;
  signal: AbortSignal;
  /** Each line of output, already scrubbed of secrets. */
  onOutput: (line: string) => void;
  /** Standard input and raw output of a caller attached to the run (local runtime only). */
  attach?: AttachedStdio;
}

export interface RolloutResult {
  /** Where the web processes answer, when they are reachable from outside. */
  url: string | null;
  /** Instances (or pods) serving the new release, for `deploy_metadata`. */
  instances: Array<Record<string, string | number | null>>;
}

/** A failure worth showing as the deployment's `error_detail` (never a secret in it). */
export class RolloutFailure extends PipelineFailure {
  constructor(
    message: string,
    code: FailureCode = 'deploy_failed',
    /** What the runtime saw of the failed instance, kept as the deployment's `failure`. */
    readonly diagnosis: DeployDiagnosis | null = null,
  ) {
    super(message, code);
  }
}

/** Resource usage of one application environment at one moment. */
export interface AppUsage {
  applicationId: string;
  environmentId: string;
  cpuMillicores: number;
  memoryBytes: number;
  podCount: number;
  restartCount: number;
  /** The largest share (percent) of its own memory limit one instance uses; null when none has a limit (alert rules). */
  memoryPercentMax?: number | null;
  /** The same per process type (what autoscaling reads). */
  processes?: Record<string, ProcessUsage>;
}

/** CPU and running instances of one process type of an application environment. */
export interface ProcessUsage {
  /** null when the runtime cannot read CPU (a cluster without metrics-server). */
  cpuMillicores: number | null;
  podCount: number;
}

/** What a runtime gets when it starts in a worker process. */
export interface RuntimeStartOptions {
  logger: RuntimeLogger;
  /** The worker process's id (recorded on what it runs, so other workers leave it alone). */
  workerId: () => string | null;
}

export interface RuntimeLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

/** One line of a running instance's output (scrubbed of the release's secret values). */
export interface AppOutputLine {
  applicationId: string;
  environmentId: string;
  instanceId: string;
  processType: string;
  stream: 'stdout' | 'stderr';
  line: string;
  at: Date;
}

/** An add-on as a runtime finds its server: its id, name and organization. */
export interface AddonRef {
  id: string;
  name: string;
  organizationSlug: string;
}

export interface ApplicationRuntime {
  readonly name: 'local' | 'kubernetes';
  /**
   * Whether the workloads live outside the platform process and every process sees the same
   * ones (a cluster). Then samples are aligned to the sampling interval (several workers
   * record one row), and a deployment interrupted mid-way is rolled back by another worker.
   */
  readonly sharedWorkloads: boolean;
  /** The edge serving the instances from this process (local runtime); a cluster's is its own ingress. */
  readonly router?: { readonly listening: boolean };
  /** Before job workers start: routers, clients, removal of leftovers of a dead process. */
  start(options: RuntimeStartOptions): Promise<void>;
  /** Stops what this process runs (local processes; a cluster keeps its workloads). */
  shutdown(): Promise<void>;
  /**
   * Makes the next `shutdown` stop only the control plane: local instances keep running under
   * their shims and the next start adopts them (an upgrade: SIGUSR2, or SIGTERM with
   * SLIPWAY_STOP_KEEPS_SERVING). A cluster's workloads always stay.
   */
  keepServingOnShutdown?(): void;
  /** Runs before the runtime stops (e.g. the metrics sampler stops first). */
  onShutdown(hook: () => Promise<void> | void): void;
  /**
   * Setup: checks the release can run here and prepares what its processes need. Throws
   * `RolloutFailure` saying what is missing (e.g. an image that was never pushed).
   */
  prepare(plan: WorkloadPlan, log: (line: string) => void): Promise<void>;
  /**
   * A named restore point on a Postgres add-on this runtime runs (`pg_create_restore_point`), where
   * the platform cannot connect to it itself (a cluster's add-on: through its pod). Answers the LSN.
   * Absent: the platform connects to the add-on on its loopback port.
   */
  addonRestorePoint?(addon: AddonRef, name: string): Promise<string>;
  /** Runs a one-off process type (`release`, `postdeploy`) of the plan to completion. */
  runOnce(plan: WorkloadPlan, processType: string, options: OneOffOptions): Promise<OneOffResult>;
  /**
   * Deploy and Rollout: starts the plan's processes beside the previous release's, waits
   * until they are ready (by `deadline`), switches traffic, retires the previous release.
   * Throws `RolloutFailure` with the reason; the caller then reconciles back to the
   * release that was serving.
   */
  rollout(plan: WorkloadPlan, log: RolloutLog, deadline: number, signal: AbortSignal): Promise<RolloutResult>;
  /**
   * Makes what runs match `plan` (the current deployment with the current process counts),
   * or stops everything of the target when there is none. Used after a scale, after a
   * failed deployment, and when the platform starts.
   */
  reconcile(target: WorkloadTarget, plan: WorkloadPlan | null, signal: AbortSignal): Promise<void>;
  /** CPU, memory, pod and restart counts per application environment. */
  usage(): Promise<AppUsage[]>;
  /** Runs a command inside one of the instances this process runs (`slipway exec`); throws ExecRefused when it cannot. */
  exec?(instanceId: string, request: ExecRequest): Promise<ExecProcess>;
  /**
   * The instances of an application environment where the runtime keeps no instance rows (a
   * cluster's pods): what `slipway exec` chooses from, their ids what `exec` takes.
   */
  execInstances?(applicationId: string, environmentId: string): Promise<RuntimeInstance[]>;
  /**
   * Every line the application instances this process runs (or, on a cluster, follows)
   * write, for the application logs. Call before `start`.
   */
  onInstanceOutput(listener: (line: AppOutputLine) => void): void;
}

/** An instance as `slipway exec` names it (`web.1`): a pod on Kubernetes, its uid the id. */
export interface RuntimeInstance {
  id: string;
  process_type: string;
  /** 1, 2, … by age within the process type. */
  ordinal: number;
  state: 'healthy' | 'starting' | 'stopped';
}
