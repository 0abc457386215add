/**
 * The Kubernetes driver of the application runtime port (`RUNTIME=kubernetes`): a namespace
 * per organization, per application environment a Deployment per process type, a Service
 * (and an Ingress) for `web`, the release's configuration in an immutable Secret, one-off
 * process types as Jobs. Everything is applied server-side under the `slipway` field manager;
 * workloads keep running when the platform stops.
 */
import type { KubeConfig, V1Deployment, V1Job, V1Pod, V1Secret } from '@kubernetes/client-node';
import { ConfigError, type Config } from '../../../config.js';
import {
  RolloutFailure,
  type AppUsage,
  type ApplicationRuntime,
  type OneOffOptions,
  type RolloutLog,
  type RolloutResult,
  type RuntimeStartOptions,
  type WorkloadPlan,
  type WorkloadTarget,
} from '../application-runtime.js';
import type { AddonRef, AppOutputLine, RuntimeInstance, RuntimeLogger } from '../application-runtime.js';
import { ExecRefused } from '../local/instance-exec.js';
import type { ExecProcess, ExecRequest } from '../port.js';
import { execInPod } from './pod-exec.js';
import type { OneOffResult } from '../port.js';
import { reportBackgroundFailure } from '../../observability/background-failures.js';
import { StartupError } from '../../startup-error.js';
import { scrubber } from '../scrub.js';
import { diagnosisLines } from '../diagnosis.js';
import { KubernetesCluster, describeError, loadKubeConfig, statusCode, type ObjectRef } from './cluster.js';
import {
  configSecretManifest,
  formationTypes,
  jobManifest,
  processSelector,
  namespaceManifest,
  networkPolicyManifest,
  pullSecretManifest,
  workloadManifests,
  type ManifestOptions,
  type WorkloadManifests,
} from './manifests.js';
import { ANNOTATION, LABEL, MANAGER, appLabels, labelSelector, namespaceName, workloadNames, type WorkloadNames } from './names.js';
import { Waker, beforeDeadline, refusedPodCreation, unrecoverablePodFailure, waitForRollout } from './rollout.js';
import { cpuMillicores, memoryBytes, summarizeUsage } from './usage.js';
import { OneOffLog } from './one-off-log.js';
import { KubernetesAddons, type KubernetesAddonsOptions } from './kubernetes-addons.js';
import { PodLogFollower } from './pod-logs.js';
import { addonObjectNames } from './addon-manifests.js';
import { runInPod } from './addon-backups.js';
import { restorePointScript } from './addon-sql.js';

/** A `.dockerconfigjson` document that lets the cluster pull the plan's image, or null (public registry). */
export type PullSecretSource = (plan: WorkloadPlan) => Promise<string | null>;

export interface KubernetesRuntimeOptions {
  kubeConfig: KubeConfig;
  namespacePrefix: string;
  ingressClass: string | null;
  ingressAnnotations?: Record<string, string>;
  /** The ingress controller's namespace, allowed through each organization's NetworkPolicy. Default `ingress-nginx`. */
  ingressNamespace?: string;
  /** Whether pods may connect to the internet (never to private addresses). Default true. */
  outbound?: boolean;
  pullSecret: PullSecretSource;
  logger?: RuntimeLogger;
  /** Longest wait between two status checks (watches wake the check sooner). Default 1000. */
  pollIntervalMs?: number;
  /** Longest wait for one Kubernetes API request. Default 30 s. */
  requestTimeoutMs?: number;
}

const silentLogger: RuntimeLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

const ref = (apiVersion: string, kind: string, name: string, namespace?: string): ObjectRef => ({ apiVersion, kind, name, namespace });

/** Kinds `reconcile(target, null)` removes, dependents first. */
const OWNED_KINDS: Array<[apiVersion: string, kind: string]> = [
  ['networking.k8s.io/v1', 'Ingress'],
  ['v1', 'Service'],
  ['apps/v1', 'Deployment'],
  ['batch/v1', 'Job'],
  ['v1', 'Secret'],
];

export class KubernetesRuntime implements ApplicationRuntime {
  readonly name = 'kubernetes' as const;
  readonly sharedWorkloads = true;
  readonly cluster: KubernetesCluster;
  private readonly hooks: Array<() => Promise<void> | void> = [];
  private logger: RuntimeLogger;
  private readonly pollIntervalMs: number;
  private warnedNoMetrics = false;
  private podLogs: PodLogFollower | null = null;

  constructor(private readonly options: KubernetesRuntimeOptions) {
    this.cluster = new KubernetesCluster(options.kubeConfig, { requestTimeoutMs: options.requestTimeoutMs });
    this.logger = options.logger ?? silentLogger;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
  }

  async start(options?: RuntimeStartOptions): Promise<void> {
    // The worker's logger (structured) replaces the one given at construction.
    if (options) this.logger = options.logger;
    try {
      const version = await this.cluster.serverVersion();
      this.logger.info({}, `Kubernetes runtime: API server ${this.cluster.server} (${version})`);
    } catch (error) {
      throw new StartupError(`Kubernetes API server ${this.cluster.server} is not reachable: ${describeError(error)}`);
    }
    this.podLogs?.start();
  }

  onInstanceOutput(listener: (line: AppOutputLine) => void): void {
    this.podLogs = new PodLogFollower(this.cluster, listener, (message) => this.logger.warn({}, message));
    this.hooks.push(() => this.podLogs?.stop());
  }

  /** The add-on backend on this cluster; built here because only this module's importers may load the Kubernetes client. */
  createAddons(options: KubernetesAddonsOptions): KubernetesAddons {
    return new KubernetesAddons(options);
  }

  onShutdown(hook: () => Promise<void> | void): void {
    this.hooks.push(hook);
  }

  async shutdown(): Promise<void> {
    for (const hook of this.hooks.splice(0)) {
      try {
        await hook();
      } catch (error) {
        this.logger.warn({ err: error }, 'Kubernetes runtime: a shutdown hook failed');
      }
    }
    this.cluster.stopWatches();
  }

  async prepare(plan: WorkloadPlan, log: (line: string) => void): Promise<void> {
    if (!plan.image.registryReference) {
      throw new RolloutFailure(
        'The Kubernetes runtime runs container images: build from a Dockerfile with REGISTRY_URL set so the image is pushed to the registry',
      );
    }
    await this.guard(plan, 'Setup', async () => {
      const names = this.names(plan);
      await this.ensureNamespace(names);
      log(`Namespace ${names.namespace}`);
      await this.cluster.apply(configSecretManifest(plan, names));
      log(`Configuration: Secret ${names.configSecret(plan.release.version)} (${Object.keys(plan.env).length} variables)`);
      if (await this.refreshPullSecret(plan, names)) log(`Image pull secret ${names.pullSecret}`);
    });
  }

  async runOnce(plan: WorkloadPlan, processType: string, options: OneOffOptions): Promise<OneOffResult> {
    if (!plan.processes[processType]) throw new RolloutFailure(`The release has no ${processType} process`);
    const names = this.names(plan);
    const scrub = scrubber(plan.secrets);
    const node = await this.guard(plan, processType, () => this.volumeNode(plan, processType, names));
    const manifest = jobManifest(plan, processType, await this.manifestOptions(plan, names), (options.deadline - Date.now()) / 1000, node);
    const jobName = manifest.metadata!.name!;
    const jobRef = ref('batch/v1', 'Job', jobName, names.namespace);
    const podSelector = `job-name=${jobName}`;
    await this.guard(plan, processType, () => this.cluster.apply(manifest));

    const output = new OneOffLog(this.cluster, names.namespace, names.container(processType), processType, (line) =>
      options.onOutput(scrub(line)),
    );
    const waker = new Waker();
    // The watch only wakes the loop early: never wait for it to open (a hung API server).
    let stopWatch: () => void = () => undefined;
    let done = false;
    this.cluster
      .watch(
        `/apis/batch/v1/namespaces/${names.namespace}/jobs`,
        { fieldSelector: `metadata.name=${jobName}` },
        waker.wake,
        () => undefined,
      )
      .then(
        (stop) => {
          if (done) stop();
          else stopWatch = stop;
        },
        () => undefined,
      );
    try {
      for (;;) {
        if (options.signal.aborted) {
          await this.deleteJob(jobRef);
          return { exitCode: null, signal: 'SIGTERM', timedOut: false };
        }
        let job: V1Job | null;
        let pods: V1Pod[];
        try {
          [job, pods] = await this.guard(plan, processType, () =>
            beforeDeadline(
              Promise.all([this.cluster.read<V1Job>(jobRef), this.cluster.pods(names.namespace, podSelector)]),
              options.deadline,
              options.signal,
            ),
          );
        } catch (error) {
          if (options.signal.aborted) continue;
          throw error;
        }
        if (!job) throw new RolloutFailure(`${processType}: Job ${jobName} disappeared`);
        const finished = job.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
        const pod = newest(pods);
        output.follow(pod);
        if (finished) {
          await output.finish(pod, true);
          const timedOut = finished.type === 'Failed' && finished.reason === 'DeadlineExceeded';
          const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
          const exitCode = terminated?.exitCode ?? (finished.type === 'Complete' ? 0 : null);
          return { exitCode: timedOut ? null : exitCode, signal: null, timedOut };
        }
        // No pod: the cluster may refuse to create it (Pod Security, an admission webhook, a quota).
        const refused = pod
          ? null
          : await this.guard(plan, processType, () =>
              beforeDeadline(this.cluster.events(names.namespace, jobName), options.deadline, options.signal),
            ).then(refusedPodCreation, () => null);
        if (refused) {
          options.onOutput(scrub(`${processType}: ${refused}`));
          await this.deleteJob(jobRef);
          return { exitCode: null, signal: null, timedOut: false };
        }
        const failure = pod ? unrecoverablePodFailure(pod, processType) : null;
        if (failure && failure.code !== 'crash_loop' && failure.code !== 'oom') {
          options.onOutput(scrub(`${processType}: ${failure.message}`));
          await this.deleteJob(jobRef);
          return { exitCode: null, signal: null, timedOut: false };
        }
        if (Date.now() >= options.deadline) {
          await output.finish(pod, false);
          await this.deleteJob(jobRef);
          return { exitCode: null, signal: null, timedOut: true };
        }
        await waker.sleep(Math.min(this.pollIntervalMs, options.deadline - Date.now()), options.signal);
      }
    } finally {
      done = true;
      stopWatch();
    }
  }

  async rollout(plan: WorkloadPlan, log: RolloutLog, deadline: number, signal: AbortSignal): Promise<RolloutResult> {
    const names = this.names(plan);
    const manifests = workloadManifests(plan, await this.manifestOptions(plan, names));
    const scrub = scrubber(plan.secrets);
    const summary = manifests.deployments.map((d) => `${d.processType}=${d.replicas}`).join(', ') || 'no process types';
    await log.step('Deploy', `Applying ${summary} to namespace ${names.namespace}`);
    await this.guard(plan, 'Deploy', () =>
      this.applyWorkloads(
        manifests,
        manifests.deployments.map((d) => d.processType),
      ),
    );
    await log.step('Rollout', `Waiting for ${summary} to be ready (up to ${plan.timeoutSeconds}s)`);
    let readyPods: V1Pod[];
    try {
      readyPods = await waitForRollout({
        cluster: this.cluster,
        namespace: names.namespace,
        plan,
        deadline,
        signal,
        pollIntervalMs: this.pollIntervalMs,
        targets: manifests.deployments.map((d) => ({
          processType: d.processType,
          deploymentName: d.manifest.metadata!.name!,
          replicas: d.replicas,
        })),
        log: (line) => log.line(scrub(line)),
      });
    } catch (error) {
      if (error instanceof RolloutFailure) {
        const diagnosis = error.diagnosis && {
          ...error.diagnosis,
          output: error.diagnosis.output.map(scrub),
          hint: error.diagnosis.hint && scrub(error.diagnosis.hint),
        };
        if (diagnosis) for (const line of diagnosisLines(diagnosis)) log.line(`Rollout: ${scrub(line)}`);
        throw new RolloutFailure(scrub(error.message), error.code, diagnosis);
      }
      throw error;
    }
    await this.guard(plan, 'Rollout', async () => {
      await this.deleteRetiredDeployments(plan, names);
      await this.deleteOldConfigSecrets(plan, names);
    });
    const web = manifests.service !== null;
    return {
      url: manifests.ingress ? `http://${plan.hostname}` : web ? `http://${names.service}.${names.namespace}.svc.cluster.local` : null,
      instances: readyPods.map((pod) => ({
        process_type: pod.metadata?.labels?.[LABEL.processType] ?? null,
        pod: pod.metadata?.name ?? null,
      })),
    };
  }

  async reconcile(target: WorkloadTarget, plan: WorkloadPlan | null, signal: AbortSignal): Promise<void> {
    if (!plan) return this.removeAll(target, signal);
    const names = this.names(plan);
    const selector = labelSelector(appLabels(plan.application.id, plan.environment.id));
    await this.guard(plan, 'Reconcile', async () => {
      const existing = await this.cluster.list<V1Deployment>('apps/v1', 'Deployment', names.namespace, selector);
      const byName = new Map(existing.map((d) => [d.metadata!.name!, d]));
      const drifted: string[] = [];
      for (const processType of formationTypes(plan)) {
        if (signal.aborted) return;
        const current = byName.get(names.deployment(processType));
        const replicas = plan.formation[processType] ?? 0;
        if (current?.metadata?.annotations?.[ANNOTATION.deploymentId] === plan.deploymentId && sameResources(current, plan, processType)) {
          // The same deployment: only the process count may differ (a scale).
          if (current.spec?.replicas !== replicas)
            await this.cluster.scaleDeployment(names.namespace, names.deployment(processType), replicas);
        } else {
          // Another deployment's spec, or a new pod class for this type: apply the whole Deployment.
          drifted.push(processType);
        }
      }
      if (drifted.length > 0) {
        // A failed deployment left the new release (or someone changed it): apply the serving one back.
        await this.prepare(plan, () => undefined);
        await this.applyWorkloads(workloadManifests(plan, await this.manifestOptions(plan, names)), drifted);
      } else {
        // Pull credentials expire: every scale and platform start renews them for pods yet to be scheduled.
        await this.refreshPullSecret(plan, names);
      }
      await this.deleteRetiredDeployments(plan, names);
    });
  }

  async usage(): Promise<AppUsage[]> {
    const pods = (await this.cluster.pods(undefined, labelSelector({ [LABEL.managedBy]: MANAGER }))).filter((pod) =>
      pod.metadata?.namespace?.startsWith(this.options.namespacePrefix),
    );
    const namespaces = [...new Set(pods.map((pod) => pod.metadata!.namespace!))];
    let metrics: Awaited<ReturnType<KubernetesCluster['podMetrics']>> = [];
    for (const namespace of namespaces) {
      const items = await this.cluster.podMetrics(namespace).catch((error) => {
        this.logger.warn({}, `Kubernetes pod metrics of ${namespace} unreadable: ${describeError(error)}`);
        return [];
      });
      if (items === null) {
        if (!this.warnedNoMetrics) this.logger.warn({}, 'Kubernetes metrics API (metrics.k8s.io) is not available: CPU and memory read 0');
        this.warnedNoMetrics = true;
        metrics = null;
        break;
      }
      metrics!.push(...items);
    }
    return summarizeUsage(pods, metrics);
  }

  /**
   * The pods of an application environment's process types (not one-off Jobs'), numbered by age
   * within their type: `web.1` is the oldest web pod. Terminating pods are stopped.
   */
  async execInstances(applicationId: string, environmentId: string): Promise<RuntimeInstance[]> {
    const selector = `${labelSelector(appLabels(applicationId, environmentId))},!${LABEL.component}`;
    const pods = (await this.cluster.pods(undefined, selector)).filter((pod) =>
      pod.metadata?.namespace?.startsWith(this.options.namespacePrefix),
    );
    const created = (p: V1Pod) =>
      `${p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).toISOString() : ''}|${p.metadata?.name}`;
    pods.sort((a, b) => created(a).localeCompare(created(b)));
    const counts = new Map<string, number>();
    return pods.map((pod) => {
      const type = pod.metadata?.labels?.[LABEL.processType] ?? 'web';
      counts.set(type, (counts.get(type) ?? 0) + 1);
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      const state = pod.metadata?.deletionTimestamp
        ? 'stopped'
        : ready
          ? 'healthy'
          : pod.status?.phase === 'Running'
            ? 'starting'
            : 'stopped';
      return { id: pod.metadata!.uid!, process_type: type, ordinal: counts.get(type)!, state };
    });
  }

  /** `slipway exec` in a pod (its id is the pod's uid), through the `exec` subresource. */
  async exec(instanceId: string, request: ExecRequest): Promise<ExecProcess> {
    const pods = await this.cluster.pods(undefined, labelSelector({ [LABEL.managedBy]: MANAGER }));
    // The session stores the uid as PostgreSQL writes a uuid: compared without case or dashes.
    const uid = (text: string | undefined) => text?.toLowerCase().replace(/-/g, '');
    const pod = pods.find(
      (p) => uid(p.metadata?.uid) === uid(instanceId) && p.metadata?.namespace?.startsWith(this.options.namespacePrefix),
    );
    if (!pod || pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') throw new ExecRefused('the pod does not run now');
    try {
      return await execInPod(
        this.options.kubeConfig,
        { namespace: pod.metadata!.namespace!, pod: pod.metadata!.name!, container: pod.spec!.containers[0]!.name },
        request,
      );
    } catch (error) {
      throw new ExecRefused(describeError(error));
    }
  }

  /** The credentials the runtime talks to the cluster with (add-on backups exec into CloudNativePG's pods). */
  get kubeConfig(): KubeConfig {
    return this.options.kubeConfig;
  }

  /**
   * The node of the process type's instance when it has volumes: their ReadWriteOnce claims are
   * attached there, so a one-off run that mounts them must run there too. None running: anywhere.
   */
  private async volumeNode(plan: WorkloadPlan, processType: string, names: WorkloadNames): Promise<string | null> {
    if (!(plan.volumes ?? []).some((v) => v.processType === processType)) return null;
    const pods = await this.cluster.pods(names.namespace, labelSelector(processSelector(plan, processType)));
    const holder = pods.find(
      (p) => !p.metadata?.deletionTimestamp && p.spec?.nodeName && p.metadata?.labels?.[LABEL.component] !== 'one-off',
    );
    return holder?.spec?.nodeName ?? null;
  }

  /** `pg_create_restore_point` on a Postgres add-on's primary (its CloudNativePG pod), through `exec`. */
  async addonRestorePoint(addon: AddonRef, name: string): Promise<string> {
    const names = addonObjectNames({ id: addon.id, name: addon.name, namespace: this.namespaceOf(addon.organizationSlug) });
    const run = await runInPod(
      this.options.kubeConfig,
      { namespace: names.namespace, pod: `${names.base}-1` },
      restorePointScript(),
      `${name}\n`,
      30_000,
    );
    const lsn = /^lsn=(\S+)$/m.exec(run.stdout)?.[1];
    if (run.code !== 0 || !lsn) throw new Error(run.stderr.trim().split('\n').pop()?.slice(0, 300) || `exit code ${run.code}`);
    return lsn;
  }

  /** An organization's namespace: its add-ons live beside its applications. */
  namespaceOf(organizationSlug: string): string {
    return namespaceName(this.options.namespacePrefix, organizationSlug);
  }

  /** Makes an organization's namespace and its isolation policy (an add-on may come before any application). */
  ensureOrganizationNamespace(namespace: string): Promise<void> {
    return this.ensureNamespace({ namespace });
  }

  private names(plan: WorkloadPlan): WorkloadNames {
    return workloadNames(plan, this.options.namespacePrefix);
  }

  /** Whether Deployments refer to a pull secret: it exists (prepare made it). */
  private async manifestOptions(plan: WorkloadPlan, names: WorkloadNames): Promise<ManifestOptions> {
    const pullSecret = await this.guard(plan, 'Setup', () =>
      this.cluster.read<V1Secret>(ref('v1', 'Secret', names.pullSecret, names.namespace)),
    );
    const hasPullSecret = pullSecret !== null;
    return {
      namespacePrefix: this.options.namespacePrefix,
      ingressClass: this.options.ingressClass,
      ingressAnnotations: this.options.ingressAnnotations,
      hasPullSecret,
    };
  }

  /**
   * Applies the Namespace (restricted Pod Security labels) and its NetworkPolicy. Without the
   * right to write namespaces (a namespaced role), one that exists is enough; the isolation
   * policy is not optional.
   */
  private async ensureNamespace(names: Pick<WorkloadNames, 'namespace'>): Promise<void> {
    try {
      await this.cluster.apply(namespaceManifest(names));
    } catch (error) {
      if (statusCode(error) !== 403 || !(await this.cluster.read(ref('v1', 'Namespace', names.namespace)))) throw error;
    }
    await this.cluster.apply(
      networkPolicyManifest(names, this.options.ingressNamespace ?? 'ingress-nginx', { outbound: this.options.outbound ?? true }),
    );
  }

  private async refreshPullSecret(plan: WorkloadPlan, names: WorkloadNames): Promise<boolean> {
    const document = await this.options.pullSecret(plan);
    if (!document) return false;
    await this.cluster.apply(pullSecretManifest(plan, names, document));
    return true;
  }

  private async applyWorkloads(manifests: WorkloadManifests, processTypes: string[]): Promise<void> {
    // Claims before the pods that mount them (a pod waits for its claim; the claim never waits for the pod).
    for (const claim of manifests.volumeClaims) await this.cluster.apply(claim);
    for (const d of manifests.deployments) if (processTypes.includes(d.processType)) await this.cluster.apply(d.manifest);
    const { names } = manifests;
    if (manifests.service) await this.cluster.apply(manifests.service);
    else await this.cluster.delete(ref('v1', 'Service', names.service, names.namespace));
    if (manifests.ingress) await this.cluster.apply(manifests.ingress);
    else await this.cluster.delete(ref('networking.k8s.io/v1', 'Ingress', names.ingress, names.namespace));
  }

  /** Deployments of process types the release no longer has. */
  private async deleteRetiredDeployments(plan: WorkloadPlan, names: WorkloadNames): Promise<void> {
    const keep = new Set(formationTypes(plan).map((type) => names.deployment(type)));
    const selector = labelSelector(appLabels(plan.application.id, plan.environment.id));
    for (const d of await this.cluster.list<V1Deployment>('apps/v1', 'Deployment', names.namespace, selector)) {
      if (!keep.has(d.metadata!.name!)) await this.cluster.delete(ref('apps/v1', 'Deployment', d.metadata!.name!, names.namespace));
    }
  }

  /** Config Secrets of releases older than the previous one (the previous stays for a roll back). */
  private async deleteOldConfigSecrets(plan: WorkloadPlan, names: WorkloadNames): Promise<void> {
    const selector = labelSelector({ ...appLabels(plan.application.id, plan.environment.id), [LABEL.component]: 'config' });
    const secrets = await this.cluster.list<V1Secret>('v1', 'Secret', names.namespace, selector);
    const version = (s: V1Secret) => Number(s.metadata?.labels?.[LABEL.releaseVersion] ?? NaN);
    const older = secrets.filter((s) => version(s) < plan.release.version).sort((a, b) => version(b) - version(a));
    for (const secret of older.slice(1)) await this.cluster.delete(ref('v1', 'Secret', secret.metadata!.name!, names.namespace));
  }

  /**
   * Deletes a one-off's Job once its outcome is known: the outcome stands either way, and a Job
   * left behind is removed with its application (removeAll), so a failure is reported, not thrown.
   */
  private async deleteJob(jobRef: ObjectRef): Promise<void> {
    await this.cluster
      .delete(jobRef)
      .catch((err) =>
        reportBackgroundFailure(this.logger, 'kubernetes_job_delete', err, { job: jobRef.name, namespace: jobRef.namespace }),
      );
  }

  /** Everything labelled with the application environment, in the namespaces of this platform. */
  private async removeAll(target: WorkloadTarget, signal: AbortSignal): Promise<void> {
    const selector = labelSelector(appLabels(target.applicationId, target.environmentId));
    for (const [apiVersion, kind] of OWNED_KINDS) {
      for (const object of await this.cluster.list(apiVersion, kind, undefined, selector)) {
        if (signal.aborted) return;
        const namespace = object.metadata?.namespace;
        if (!namespace?.startsWith(this.options.namespacePrefix)) continue;
        await this.cluster.delete(ref(apiVersion, kind, object.metadata!.name!, namespace));
      }
    }
  }

  /** Errors (Kubernetes API, pull secret source) become a `RolloutFailure` naming the step, secrets scrubbed. */
  private async guard<T>(plan: WorkloadPlan, what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof RolloutFailure) throw error;
      throw new RolloutFailure(scrubber(plan.secrets)(`${what}: ${describeError(error)}`));
    }
  }
}

/** Whether the Deployment runs the plan's pod class (quantities compared as numbers: the API server rewrites `1000m` as `1`). */
function sameResources(deployment: V1Deployment, plan: WorkloadPlan, processType: string): boolean {
  const want = plan.resources[processType];
  const have = deployment.spec?.template?.spec?.containers?.[0]?.resources;
  if (!want) return true;
  const cpu = (q: unknown) => (typeof q === 'string' || typeof q === 'number' ? cpuMillicores(String(q)) : NaN);
  const mib = (q: unknown) => (typeof q === 'string' || typeof q === 'number' ? memoryBytes(String(q)) / 1024 ** 2 : NaN);
  return (
    cpu(have?.requests?.cpu) === want.cpuRequestMillicores &&
    cpu(have?.limits?.cpu) === want.cpuLimitMillicores &&
    mib(have?.requests?.memory) === want.memoryRequestMiB &&
    mib(have?.limits?.memory) === want.memoryLimitMiB
  );
}

function newest(pods: V1Pod[]): V1Pod | undefined {
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return [...pods].sort((a, b) => created(b) - created(a))[0];
}

/** KUBERNETES_INGRESS_ANNOTATIONS as an object of strings; a bad value stops the start with a one-line message. */
function ingressAnnotations(text: string | undefined): Record<string, string> | undefined {
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) {
    throw new ConfigError('Invalid configuration: KUBERNETES_INGRESS_ANNOTATIONS: must be a JSON object of string values');
  }
  return parsed as Record<string, string>;
}

/** The driver from configuration: KUBECONFIG / in-cluster credentials, namespace prefix, ingress class. */
export function createKubernetesRuntime(config: Config, pullSecret: PullSecretSource, logger?: RuntimeLogger): KubernetesRuntime {
  return new KubernetesRuntime({
    kubeConfig: loadKubeConfig(config),
    namespacePrefix: config.KUBERNETES_NAMESPACE_PREFIX,
    ingressClass: config.KUBERNETES_INGRESS_CLASS ?? null,
    ingressAnnotations: ingressAnnotations(config.KUBERNETES_INGRESS_ANNOTATIONS),
    ingressNamespace: config.KUBERNETES_INGRESS_NAMESPACE,
    outbound: config.SANDBOX_OUTBOUND,
    pullSecret,
    logger,
  });
}
