import type { FailureCode } from '../../failures.js';
/**
 * Waiting for a rollout: every Deployment of the plan must have seen its latest spec and run
 * exactly its replica count of updated, ready, available pods (no old pod left). Watches wake
 * the check early; a poll keeps going when a watch ends. Failures that cannot heal (an image
 * that cannot be pulled, a crash loop) fail at once; at the deadline the reason is read from
 * pod status and events.
 */
import type { CoreV1Event, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { RolloutFailure, type WorkloadPlan } from '../application-runtime.js';
import { FAILURE_OUTPUT_LINES, hintFor, type DeployDiagnosis } from '../diagnosis.js';
import { describeError, statusCode, type KubernetesCluster } from './cluster.js';
import { ANNOTATION, LABEL, appLabels, labelSelector, processTypeLabel } from './names.js';
import { WEB_PORT } from './manifests.js';

const IMAGE_PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);
const CONFIG_ERROR_REASONS = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);

export interface RolloutTarget {
  processType: string;
  deploymentName: string;
  replicas: number;
}

export interface WaitForRolloutOptions {
  cluster: KubernetesCluster;
  namespace: string;
  plan: WorkloadPlan;
  targets: RolloutTarget[];
  deadline: number;
  signal: AbortSignal;
  log: (line: string) => void;
  pollIntervalMs: number;
}

/** One wake-up source for the wait loop: a watch event, the poll timer or an abort. */
export class Waker {
  private resolve: (() => void) | null = null;
  wake = () => {
    this.resolve?.();
    this.resolve = null;
  };
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
      this.resolve = done;
    });
  }
}

/** How long past the deadline a status read may take before the wait gives up on the API server. */
const READ_GRACE_MS = 5000;

/**
 * `work`, or a rejection once `deadline` (plus a grace) has passed or `signal` aborts: client-node
 * sets no request timeout, and an API server that stops answering must not hold a deployment
 * past its timeout. The abandoned request ends with its connection.
 */
export function beforeDeadline<T>(work: Promise<T>, deadline: number, signal: AbortSignal, graceMs = READ_GRACE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const limit = new Promise<never>((_, reject) => {
    const fail = () => reject(new Error(signal.aborted ? 'cancelled' : 'the Kubernetes API server did not answer in time'));
    timer = setTimeout(fail, Math.max(0, deadline + graceMs - Date.now()));
    onAbort = fail;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([work, limit]).finally(() => {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  });
}

export const isPodReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Pods of this deployment (the template annotation), not the previous release's. */
export function podsOfDeployment(pods: V1Pod[], processType: string, deploymentId: string): V1Pod[] {
  return pods.filter(
    (p) =>
      p.metadata?.labels?.[LABEL.processType] === processTypeLabel(processType) &&
      p.metadata?.annotations?.[ANNOTATION.deploymentId] === deploymentId &&
      !p.metadata?.deletionTimestamp,
  );
}

/** A failure that waiting cannot heal, read from a pod's container statuses. */
export function unrecoverablePodFailure(pod: V1Pod, processType: string): { code: FailureCode; message: string } | null {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses) {
    const waiting = status.state?.waiting;
    if (!waiting?.reason) continue;
    if (IMAGE_PULL_REASONS.has(waiting.reason))
      return { code: 'image_pull_failed', message: `image pull error: ${waiting.message || waiting.reason}` };
    if (waiting.reason === 'CrashLoopBackOff') {
      const last = status.lastState?.terminated;
      const oom = last?.reason === 'OOMKilled';
      return {
        code: oom ? 'oom' : 'crash_loop',
        message: `crash loop: ${processType} restarted ${status.restartCount} times (last exit code ${last?.exitCode ?? 'unknown'}${oom ? ', out of memory' : ''})`,
      };
    }
    if (CONFIG_ERROR_REASONS.has(waiting.reason))
      return { code: 'deploy_failed', message: `container error: ${waiting.message || waiting.reason}` };
  }
  return null;
}

/**
 * A crash during start as the local runtime reports one (the deployment's `failure`): the exit
 * the pod status records of the container's last run, the last lines that run printed (its
 * previous log; none when the API will not give it) and the hint for the usual causes.
 */
export async function crashDiagnosis(
  cluster: KubernetesCluster,
  namespace: string,
  pod: V1Pod,
  instance: string,
  processType: string,
): Promise<DeployDiagnosis> {
  const status = pod.status?.containerStatuses?.[0];
  const last = status?.lastState?.terminated;
  const description = last
    ? last.reason === 'OOMKilled'
      ? `OOM: killed out of memory (exit code ${last.exitCode})`
      : last.signal
        ? `signal ${last.signal}`
        : `exit code ${last.exitCode}`
    : null;
  const output = status?.name
    ? await cluster.previousLogTail(namespace, pod.metadata!.name!, status.name, FAILURE_OUTPUT_LINES).catch(() => [] as string[])
    : [];
  const web = processType === 'web';
  const found: Omit<DeployDiagnosis, 'hint'> = {
    reason: 'crashed_during_start',
    instance,
    process_type: processType,
    exit: description ? { code: last?.exitCode ?? null, signal: last?.signal ? String(last.signal) : null, description } : null,
    port: web ? WEB_PORT : null,
    health_check: null,
    listening_ports: null,
    listening_checked: 'not read on Kubernetes',
    seconds_after_healthy: null,
    output: output.map((l) => l.slice(0, 500)),
  };
  return { ...found, hint: hintFor(found) };
}

/** Admission refusals no wait can heal: Pod Security, a validating webhook. (A quota may free up: it waits.) */
const ADMISSION_REFUSAL = /violates PodSecurity|admission webhook .* denied the request/;

function podsRefused(message: string): string {
  return `the cluster refused to create its pods: ${message.replace(/^Error creating: /, '')}`;
}

/** Why a Deployment's ReplicaSet cannot create pods (condition ReplicaFailure), or null. */
export function replicaFailure(deployment: V1Deployment | undefined): string | null {
  const failure = deployment?.status?.conditions?.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  return failure?.message ? podsRefused(failure.message) : null;
}

/** An admission refusal of a controller's pod (a FailedCreate event), or null. */
export function refusedPodCreation(events: CoreV1Event[]): string | null {
  const failed = latest(events, 'FailedCreate');
  return failed?.message && ADMISSION_REFUSAL.test(failed.message) ? podsRefused(failed.message) : null;
}

function isComplete(deployment: V1Deployment | undefined, target: RolloutTarget, deploymentId: string): boolean {
  if (!deployment) return false;
  if (deployment.metadata?.annotations?.[ANNOTATION.deploymentId] !== deploymentId) return false;
  const status = deployment.status ?? {};
  const want = target.replicas;
  return (
    (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0) &&
    (deployment.spec?.replicas ?? 1) === want &&
    (status.replicas ?? 0) === want &&
    (status.updatedReplicas ?? 0) === want &&
    (status.readyReplicas ?? 0) === want &&
    (status.availableReplicas ?? 0) === want
  );
}

const latest = (events: CoreV1Event[], reason: string) => [...events].reverse().find((e) => e.reason === reason);

/** Why a process type is not ready at the deadline: a failed probe, an unschedulable pod, or counts. */
async function timeoutReason(
  cluster: KubernetesCluster,
  namespace: string,
  target: RolloutTarget,
  pods: V1Pod[],
  deployment: V1Deployment | undefined,
): Promise<string> {
  const ready = pods.filter(isPodReady).length;
  const refused = replicaFailure(deployment);
  if (refused) return refused;
  for (const pod of pods.filter((p) => !isPodReady(p)).slice(0, 3)) {
    const unrecoverable = unrecoverablePodFailure(pod, target.processType);
    if (unrecoverable) return unrecoverable.message;
    const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    if (unscheduled) return `unschedulable: ${unscheduled.message || unscheduled.reason || 'no node fits'}`;
    try {
      const unhealthy = latest(
        await beforeDeadline(cluster.events(namespace, pod.metadata!.name!), Date.now(), new AbortController().signal),
        'Unhealthy',
      );
      if (unhealthy?.message) return `failed probe: ${unhealthy.message.trim()}`;
    } catch (error) {
      return `${ready}/${target.replicas} replicas ready (events unreadable: ${describeError(error)})`;
    }
  }
  return `${ready}/${target.replicas} replicas ready`;
}

/** Waits for every target; returns the ready pods of this deployment. Throws `RolloutFailure`. */
export async function waitForRollout(options: WaitForRolloutOptions): Promise<V1Pod[]> {
  const { cluster, namespace, plan, targets, deadline, signal, log } = options;
  const selector = labelSelector(appLabels(plan.application.id, plan.environment.id));
  const waker = new Waker();
  const stops: Array<() => void> = [];
  let finished = false;
  // Watches only wake the loop early; when one ends the poll interval carries on.
  for (const path of [`/apis/apps/v1/namespaces/${namespace}/deployments`, `/api/v1/namespaces/${namespace}/pods`]) {
    cluster
      .watch(path, { labelSelector: selector }, waker.wake, () => undefined)
      .then(
        (stop) => (finished ? stop() : stops.push(stop)),
        () => undefined,
      );
  }
  const progress = new Map<string, string>();
  try {
    for (;;) {
      if (signal.aborted) throw new RolloutFailure('Deployment cancelled: the platform is stopping', 'interrupted');
      let deployments: V1Deployment[];
      let pods: V1Pod[];
      try {
        [deployments, pods] = await beforeDeadline(
          Promise.all([cluster.list<V1Deployment>('apps/v1', 'Deployment', namespace, selector), cluster.pods(namespace, selector)]),
          deadline,
          signal,
        );
      } catch (error) {
        if (signal.aborted) throw new RolloutFailure('Deployment cancelled: the platform is stopping', 'interrupted');
        // A blip of the API server is retried until the deadline; a refusal (RBAC) is not a blip.
        if (Date.now() >= deadline || statusCode(error) === 403)
          throw new RolloutFailure(
            `Deployment failed: ${describeError(error)}`,
            statusCode(error) === 403 ? 'workload_refused' : 'deploy_timeout',
          );
        log(`Kubernetes API error (retrying): ${describeError(error)}`);
        await waker.sleep(Math.min(options.pollIntervalMs, deadline - Date.now()), signal);
        continue;
      }
      const byName = new Map(deployments.map((d) => [d.metadata!.name!, d]));
      const pending: Array<{ target: RolloutTarget; pods: V1Pod[] }> = [];
      const ready: V1Pod[] = [];
      for (const target of targets) {
        const own = podsOfDeployment(pods, target.processType, plan.deploymentId);
        const readyPods = own.filter(isPodReady);
        const line = `Rollout: ${target.processType} ${Math.min(readyPods.length, target.replicas)}/${target.replicas} ready`;
        if (progress.get(target.processType) !== line) {
          progress.set(target.processType, line);
          log(line);
        }
        for (const [index, pod] of own.entries()) {
          const failure = unrecoverablePodFailure(pod, target.processType);
          if (!failure) continue;
          const diagnosis =
            failure.code === 'crash_loop' || failure.code === 'oom'
              ? await crashDiagnosis(cluster, namespace, pod, `${target.processType}.${index + 1}`, target.processType)
              : null;
          throw new RolloutFailure(
            `Deployment failed: ${target.processType}: ${failure.message}${diagnosis?.hint ? `. Hint: ${diagnosis.hint}` : ''}`,
            failure.code,
            diagnosis,
          );
        }
        const refused = replicaFailure(byName.get(target.deploymentName));
        if (refused && ADMISSION_REFUSAL.test(refused))
          throw new RolloutFailure(`Deployment failed: ${target.processType}: ${refused}`, 'workload_refused');
        if (isComplete(byName.get(target.deploymentName), target, plan.deploymentId)) ready.push(...readyPods);
        else pending.push({ target, pods: own });
      }
      if (pending.length === 0) return ready;
      if (Date.now() >= deadline) {
        const reasons = await Promise.all(
          pending.map(
            async ({ target, pods: own }) =>
              `${target.processType}: ${await timeoutReason(cluster, namespace, target, own, byName.get(target.deploymentName))}`,
          ),
        );
        throw new RolloutFailure(`Deployment timed out after ${plan.timeoutSeconds}s: ${reasons.join('; ')}`, 'deploy_timeout');
      }
      await waker.sleep(Math.min(options.pollIntervalMs, deadline - Date.now()), signal);
    }
  } finally {
    finished = true;
    for (const stop of stops) stop();
  }
}
