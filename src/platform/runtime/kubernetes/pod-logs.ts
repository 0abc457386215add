import type { V1Pod } from '@kubernetes/client-node';
import type { AppOutputLine } from '../application-runtime.js';
import type { KubernetesCluster } from './cluster.js';
import { LABEL, MANAGER } from './names.js';

/** How often the pods to follow are listed again (new pods, ended ones). */
const LIST_INTERVAL_MS = 5000;

/**
 * Application logs on a cluster: follows the log of every running pod of a long-running
 * process (one-offs excluded: their output goes to their deployment or run), from the
 * time this follower first sees the pod, and hands each line on. Kubernetes merges a
 * container's stdout and stderr, so lines are reported as `stdout`.
 */
export class PodLogFollower {
  private readonly following = new Map<string, { stop(): void }>();
  private timer: NodeJS.Timeout | null = null;
  /** Set by stop() for good: a listing in flight then follows nothing (its lines would outlive the platform's database). */
  private stopped = false;
  private readonly startedAt = new Date();

  constructor(
    private readonly cluster: KubernetesCluster,
    private readonly onLine: (line: AppOutputLine) => void,
    private readonly onError: (message: string) => void,
  ) {}

  start(): void {
    if (this.timer || this.stopped) return;
    const tick = () => {
      void this.refresh().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, LIST_INTERVAL_MS).unref();
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const f of this.following.values()) f.stop();
    this.following.clear();
  }

  private async refresh(): Promise<void> {
    let pods: V1Pod[];
    try {
      pods = await this.cluster.pods(undefined, `${LABEL.managedBy}=${MANAGER},${LABEL.component}!=one-off`);
    } catch (error) {
      if (!this.stopped) this.onError(`listing pods for application logs failed: ${String(error)}`);
      return;
    }
    // Stopped while the list was on its way: following now would start streams nobody stops.
    if (this.stopped) return;
    const running = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata?.uid;
      if (!uid || pod.status?.phase !== 'Running') continue;
      running.add(uid);
      if (!this.following.has(uid)) this.follow(pod, uid);
    }
    for (const [uid, f] of this.following)
      if (!running.has(uid)) {
        f.stop();
        this.following.delete(uid);
      }
  }

  private follow(pod: V1Pod, uid: string) {
    if (this.stopped) return;
    const labels = pod.metadata?.labels ?? {};
    const applicationId = labels[LABEL.applicationId];
    const environmentId = labels[LABEL.environmentId];
    const container = pod.spec?.containers?.[0]?.name;
    if (!applicationId || !environmentId || !container) return;
    const placeholder = {
      stop: () => {
        placeholder.stopped = true;
      },
      stopped: false,
    };
    this.following.set(uid, placeholder);
    // Pods already running when this follower started: only what they write from now on.
    const podStart = new Date(pod.status?.startTime ?? 0);
    const since = podStart < this.startedAt ? this.startedAt : undefined;
    this.cluster
      .followLog(
        pod.metadata!.namespace!,
        pod.metadata!.name!,
        container,
        (line) =>
          this.onLine({
            applicationId,
            environmentId,
            instanceId: pod.metadata!.name!,
            processType: labels[LABEL.processType] ?? 'web',
            stream: 'stdout',
            line,
            at: new Date(),
          }),
        since,
      )
      .then(
        (f) => {
          if (placeholder.stopped || this.following.get(uid) !== placeholder) f.stop();
          else this.following.set(uid, f);
        },
        (error) => {
          if (this.following.get(uid) === placeholder) this.following.delete(uid);
          if (!this.stopped) this.onError(`following ${pod.metadata?.name} failed: ${String(error)}`);
        },
      );
  }
}
