import type { V1Pod } from '@kubernetes/client-node';
import { describeError, type KubernetesCluster } from './cluster.js';

const RUNNING_OR_ENDED = new Set(['Running', 'Succeeded', 'Failed']);
/** How long a follow stream may take to deliver its last lines once the pod has ended. */
const DRAIN_MS = 1000;

/**
 * The output of a one-off's pod: followed live while it runs (a long migration shows its
 * progress in the deployment log), then completed from the whole log when the pod ends (a
 * follow stream may close early), so every line arrives once and in order.
 */
export class OneOffLog {
  private emitted = 0;
  private following: { stop(): void; ended: Promise<void> } | null = null;
  private started = false;
  private closed = false;

  constructor(
    private readonly cluster: KubernetesCluster,
    private readonly namespace: string,
    private readonly container: string,
    private readonly processType: string,
    private readonly onLine: (line: string) => void,
  ) {}

  /** Starts following the pod's log once it runs (once per one-off). */
  follow(pod: V1Pod | undefined): void {
    const name = pod?.metadata?.name;
    if (this.started || !name || !RUNNING_OR_ENDED.has(pod.status?.phase ?? '')) return;
    this.started = true;
    this.cluster
      .followLog(this.namespace, name, this.container, (line) => this.emit(line))
      .then(
        (following) => {
          if (this.closed) following.stop();
          else this.following = following;
        },
        () => undefined, // the final read below still delivers everything
      );
  }

  /** The one-off ended (or ran out of time): stops following and adds the lines the stream missed. */
  async finish(pod: V1Pod | undefined, drain: boolean): Promise<void> {
    if (drain && this.following) await Promise.race([this.following.ended, new Promise((r) => setTimeout(r, DRAIN_MS))]);
    this.closed = true;
    this.following?.stop();
    const name = pod?.metadata?.name;
    if (!name) return;
    let text: string;
    try {
      text = await this.cluster.podLog(this.namespace, name, this.container);
    } catch (error) {
      this.onLine(`(${this.processType} log unreadable: ${describeError(error)})`);
      return;
    }
    const lines = text.split(/\r?\n/);
    if (lines.at(-1) === '') lines.pop();
    for (const line of lines.slice(this.emitted)) this.onLine(line);
  }

  private emit(line: string) {
    if (this.closed) return;
    this.emitted++;
    this.onLine(line);
  }
}
