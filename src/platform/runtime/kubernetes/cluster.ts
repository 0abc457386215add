/**
 * A thin wrapper over `@kubernetes/client-node`: the few calls the runtime makes, with
 * server-side apply under one field manager and errors turned into one-line messages
 * (client-node's own messages carry headers and whole bodies).
 */
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  Log,
  Metrics,
  PatchStrategy,
  VersionApi,
  Watch,
  setHeaderOptions,
  type CoreV1Event,
  type KubernetesObject,
  type PodMetric,
  type V1Pod,
} from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import { StartupError } from '../../startup-error.js';
import { LineSplitter } from '../../logs/bounded-lines.js';
import { MANAGER } from './names.js';

export interface KubeConfigSource {
  KUBECONFIG?: string;
  /** Set by Kubernetes in every pod: the platform runs inside the cluster. */
  KUBERNETES_SERVICE_HOST?: string;
}

/** KUBECONFIG file, else in-cluster credentials (inside a pod), else ~/.kube/config. */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  const kc = new KubeConfig();
  const where = source.KUBECONFIG
    ? `KUBECONFIG ${source.KUBECONFIG}`
    : source.KUBERNETES_SERVICE_HOST
      ? 'the in-cluster service account'
      : '~/.kube/config';
  try {
    if (source.KUBECONFIG) kc.loadFromFile(source.KUBECONFIG);
    else if (source.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else kc.loadFromDefault();
  } catch (error) {
    throw new StartupError(
      `RUNTIME=kubernetes: cannot read the cluster credentials from ${where}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!kc.getCurrentCluster()) throw new StartupError(`RUNTIME=kubernetes: no cluster in ${where} (set KUBECONFIG)`);
  return kc;
}

export function statusCode(error: unknown): number | null {
  if (error instanceof ApiException) return error.code;
  const code = (error as { statusCode?: unknown; code?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : null;
}

export const isNotFound = (error: unknown) => statusCode(error) === 404;

/** `Kubernetes API HTTP 422: <the API's message>` (never request bodies or headers). */
export function describeError(error: unknown): string {
  if (error instanceof ApiException) {
    let body: unknown = error.body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        /* plain text */
      }
    }
    const message = (body as { message?: unknown } | null)?.message;
    const detail = typeof message === 'string' && message ? `: ${message}` : '';
    // 403: RBAC or an admission policy said no; retrying cannot help, the message says who and why.
    if (error.code === 403) return `the Kubernetes cluster refused the request (HTTP 403 Forbidden)${detail}`;
    return `Kubernetes API HTTP ${error.code}${detail}`;
  }
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** What one watch reports; `done` fires once when the stream ends or fails. */
export type WatchHandler = (type: string, object: KubernetesObject) => void;

export class KubernetesCluster {
  readonly objects: KubernetesObjectApi;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  private readonly version: VersionApi;
  private readonly metrics: Metrics;
  private readonly watcher: Watch;
  private readonly logs: Log;
  private readonly watches = new Set<AbortController>();

  /**
   * client-node sets no timeout: a request to an API server that stopped answering would
   * hold a deployment forever. Every call (watches aside) gives up after this long.
   */
  private readonly requestTimeoutMs: number;

  constructor(
    readonly kubeConfig: KubeConfig,
    options: { requestTimeoutMs?: number } = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.apps = kubeConfig.makeApiClient(AppsV1Api);
    this.version = kubeConfig.makeApiClient(VersionApi);
    this.metrics = new Metrics(kubeConfig);
    this.watcher = new Watch(kubeConfig);
    this.logs = new Log(kubeConfig);
  }

  get server(): string {
    return this.kubeConfig.getCurrentCluster()?.server ?? '(no cluster in the kubeconfig)';
  }

  async serverVersion(): Promise<string> {
    const info = await this.limit(this.version.getCode());
    return info.gitVersion;
  }

  /** Server-side apply: creates or updates, the fields we list owned by our field manager. */
  async apply<T extends KubernetesObject>(object: T): Promise<T> {
    // client-node fills in defaults on the object it is given: hand it a copy.
    const copy = structuredClone(object);
    return this.limit(this.objects.patch(copy, undefined, undefined, MANAGER, true, PatchStrategy.ServerSideApply));
  }

  async read<T extends KubernetesObject>(ref: ObjectRef): Promise<T | null> {
    try {
      return await this.limit(
        this.objects.read<T>({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } }),
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** Objects of a kind by label selector, in one namespace or (namespace undefined) the whole cluster. */
  async list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    labelSelector: string,
  ): Promise<T[]> {
    const list = await this.limit(
      this.objects.list<T>(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector),
    );
    return list.items;
  }

  /** Deletes (dependents in the background); an absent object is not an error. */
  async delete(ref: ObjectRef): Promise<void> {
    try {
      await this.limit(
        this.objects.delete(
          { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        ),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** Changes only `spec.replicas` (the scale subresource): the pod template stays as it is. */
  async scaleDeployment(namespace: string, name: string, replicas: number): Promise<void> {
    await this.limit(
      this.apps.patchNamespacedDeploymentScale(
        { name, namespace, body: { spec: { replicas } }, fieldManager: MANAGER },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  async pods(namespace: string | undefined, labelSelector: string): Promise<V1Pod[]> {
    const list = await this.limit(
      namespace === undefined
        ? this.core.listPodForAllNamespaces({ labelSelector })
        : this.core.listNamespacedPod({ namespace, labelSelector }),
    );
    return list.items;
  }

  /** Events about one object (a pod, a Deployment), oldest first. */
  async events(namespace: string, involvedObjectName: string): Promise<CoreV1Event[]> {
    const list = await this.limit(this.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${involvedObjectName}` }));
    const at = (e: CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? 0).getTime();
    return [...list.items].sort((a, b) => at(a) - at(b));
  }

  async podLog(namespace: string, pod: string, container: string): Promise<string> {
    return this.limit(this.core.readNamespacedPodLog({ name: pod, namespace, container }));
  }

  /**
   * The last lines a container printed before it last ended (its previous instance), bounded
   * in lines and bytes: what a crash during start said.
   */
  async previousLogTail(namespace: string, pod: string, container: string, lines: number): Promise<string[]> {
    const text = await this.limit(
      this.core.readNamespacedPodLog({ name: pod, namespace, container, previous: true, tailLines: lines, limitBytes: 64 * 1024 }),
    );
    return String(text)
      .split('\n')
      .filter((l) => l.length > 0)
      .slice(-lines);
  }

  /**
   * Follows a container's log: each complete line to `onLine` until the container ends
   * (`ended`) or `stop()`. Opening the stream is bounded like any request; the stream is not.
   */
  async followLog(
    namespace: string,
    pod: string,
    container: string,
    onLine: (line: string) => void,
    since?: Date,
  ): Promise<{ stop(): void; ended: Promise<void> }> {
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => {
      markEnded = resolve;
    });
    // A pod's line without a newline must not grow the platform's memory: lines are cut.
    const lines = new LineSplitter(onLine);
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.write(chunk);
        callback();
      },
      final(callback) {
        lines.end();
        callback();
      },
    });
    sink.on('finish', markEnded);
    sink.on('error', markEnded);
    const controller = await this.limit(
      this.logs.log(namespace, pod, container, sink, { follow: true, ...(since ? { sinceTime: since.toISOString() } : {}) }),
    );
    return { stop: () => controller.abort(), ended };
  }

  /** metrics.k8s.io pod metrics of a namespace; null when the metrics API is not installed. */
  async podMetrics(namespace: string): Promise<PodMetric[] | null> {
    try {
      return (await this.limit(this.metrics.getPodMetrics(namespace))).items;
    } catch (error) {
      if (isNotFound(error) || statusCode(error) === 503) return null;
      throw error;
    }
  }

  /**
   * Streams changes under `path` (e.g. `/apis/apps/v1/namespaces/x/deployments`) until `done`
   * or `stopWatches()`. Returns a function that ends this watch.
   */
  async watch(path: string, query: Record<string, string>, onEvent: WatchHandler, done: (error: unknown) => void): Promise<() => void> {
    let controller: AbortController | null = null;
    let ended = false;
    const finish = (error: unknown) => {
      if (ended) return;
      ended = true;
      if (controller) this.watches.delete(controller);
      done(error);
    };
    controller = await this.watcher.watch(path, query, (type, object) => onEvent(type, object as KubernetesObject), finish);
    if (!ended) this.watches.add(controller);
    const stop = controller;
    return () => {
      stop.abort();
      finish(null);
    };
  }

  private limit<T>(request: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the Kubernetes API server did not answer within ${this.requestTimeoutMs / 1000} s`)),
        this.requestTimeoutMs,
      );
    });
    return Promise.race([request, timeout]).finally(() => clearTimeout(timer));
  }

  /** Ends every open watch (platform shutdown). */
  stopWatches(): void {
    for (const controller of this.watches) controller.abort();
    this.watches.clear();
  }
}
