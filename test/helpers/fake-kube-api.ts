/**
 * A fake Kubernetes API server on 127.0.0.1:<ephemeral> that speaks the real HTTP protocol
 * well enough for `@kubernetes/client-node`, and behaves as the Kubernetes documentation says
 * where the driver depends on it:
 *
 * - server-side apply (PATCH application/apply-patch+yaml) with field ownership per manager
 *   (`metadata.managedFields`), list merge by key, and 409 Conflict when another manager owns
 *   a field the apply changes and `force` is not set (see fake-kube-fields.ts);
 * - create (POST), update (PUT) and merge patch; 409 Conflict for a stale
 *   `metadata.resourceVersion`; 422 Invalid for a changed Deployment selector, a selector
 *   that does not match the template, or `maxSurge` and `maxUnavailable` both 0;
 * - Deployments rolled out through ReplicaSets: the new one scaled up in steps bounded by
 *   `maxSurge`, old ones scaled down bounded by `maxUnavailable`, status counters from them;
 * - graceful deletion: pods stay (with `deletionTimestamp`) for their grace period, objects
 *   with finalizers (or a Foreground deletion) until they are gone, namespaces until empty;
 * - 403 Forbidden for what a test forbids (`forbidden`, `forbiddenNamespaces`), and Pod
 *   Security admission: in a namespace labelled `pod-security.kubernetes.io/enforce`, a pod
 *   violating the level is rejected (403 "violates PodSecurity"); a controller that cannot
 *   create its pods reports FailedCreate (ReplicaSet/Deployment condition ReplicaFailure, an
 *   event), as on a real cluster. `podAdmission` adds a webhook-like policy.
 *
 * Also: GET/LIST with label and field selectors, `watch=true` streams, pod logs, events,
 * metrics.k8s.io and /version. A running pod's `exec` subresource (WebSocket, v5 or v4
 * channel protocol) really runs the command here, in a temporary directory as `nobody` (when the
 * tests run as root), with HOSTNAME the pod's name; with `tty=true` under util-linux `script`,
 * its terminal sized by the first resize message. Every exec is recorded (`execs`). Pods behave as a test chooses (ready, never-ready, crash-loop,
 * image-pull-error; Jobs succeed or fail with log lines). Every request is recorded.
 *
 *   const kube = await FakeKubeApi.start();
 *   kube.deploymentBehaviour = (d) => d.metadata.labels['slipway.dev/process-type'] === 'web' ? 'never-ready' : 'ready';
 *   kube.jobBehaviour = () => ({ outcome: 'fail', exitCode: 3, logs: ['migrating', 'boom'] });
 *   kube.forbiddenNamespaces.add('slipway-acme');
 *   new KubernetesRuntime({ kubeConfig: kube.kubeConfig(), ... });
 *   kube.requests.filter((r) => r.method === 'PATCH');
 *   await kube.stop();
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { WebSocketServer, type WebSocket } from 'ws';
import { ApplyConflict, recordUpdate, serverSideApply, type KObject } from './fake-kube-fields.js';

export type { KObject };

export type PodBehaviour = 'ready' | 'never-ready' | 'crash-loop' | 'image-pull-error';
export interface JobBehaviour {
  outcome: 'succeed' | 'fail' | 'hang' | 'image-pull-error';
  /** Exit code of a failing Job's container (default 1). */
  exitCode?: number;
  /** What the Job's pod prints (its log). */
  logs?: string[];
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | null;
  body: unknown;
}

/** What a request asks to do, for `forbidden`. */
export interface Access {
  verb: 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
  resource: string;
  group: string;
  namespace: string | undefined;
  name: string | undefined;
}

/** One step of a Deployment's rollout, recorded whenever its ReplicaSets change. */
export interface RolloutStep {
  namespace: string;
  deployment: string;
  desired: number;
  /** `spec.replicas` of the ReplicaSet of the current template, and of all older ones. */
  newReplicas: number;
  oldReplicas: number;
  /** Ready pods (not terminating) over all its ReplicaSets. */
  available: number;
}

interface ResourceType {
  group: string;
  version: string;
  name: string;
  kind: string;
  namespaced: boolean;
}

const RESOURCES: ResourceType[] = [
  { group: '', version: 'v1', name: 'namespaces', kind: 'Namespace', namespaced: false },
  { group: '', version: 'v1', name: 'secrets', kind: 'Secret', namespaced: true },
  { group: '', version: 'v1', name: 'services', kind: 'Service', namespaced: true },
  { group: '', version: 'v1', name: 'pods', kind: 'Pod', namespaced: true },
  { group: '', version: 'v1', name: 'events', kind: 'Event', namespaced: true },
  { group: '', version: 'v1', name: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', namespaced: true },
  { group: 'apps', version: 'v1', name: 'deployments', kind: 'Deployment', namespaced: true },
  { group: 'apps', version: 'v1', name: 'replicasets', kind: 'ReplicaSet', namespaced: true },
  { group: 'batch', version: 'v1', name: 'jobs', kind: 'Job', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', name: 'ingresses', kind: 'Ingress', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', name: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true },
  { group: 'apps', version: 'v1', name: 'statefulsets', kind: 'StatefulSet', namespaced: true },
  // CloudNativePG's custom resources, as if its CRDs were installed (their schema is not checked here: see test/kubernetes/crds).
  { group: 'postgresql.cnpg.io', version: 'v1', name: 'clusters', kind: 'Cluster', namespaced: true },
  { group: 'postgresql.cnpg.io', version: 'v1', name: 'scheduledbackups', kind: 'ScheduledBackup', namespaced: true },
  { group: 'postgresql.cnpg.io', version: 'v1', name: 'backups', kind: 'Backup', namespaced: true },
];

const groupVersion = (r: ResourceType) => (r.group ? `${r.group}/${r.version}` : r.version);
const keyOf = (r: ResourceType) => `${groupVersion(r)}/${r.name}`;
const resourceByKey = new Map(RESOURCES.map((r) => [keyOf(r), r]));
const resourceOf = (plural: string) => RESOURCES.find((r) => r.name === plural)!;
const qualified = (r: ResourceType) => (r.group ? `${r.name}.${r.group}` : r.name);
const kindQualified = (r: ResourceType) => (r.group ? `${r.kind}.${r.group}` : r.kind);

class HttpError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

function matchesLabels(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  return selector
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .every((term) => {
      let m: RegExpExecArray | null;
      if ((m = /^([^!=]+)!=(.*)$/.exec(term))) return l[m[1]!.trim()] !== m[2]!.trim();
      if ((m = /^([^!=]+)==?(.*)$/.exec(term))) return l[m[1]!.trim()] === m[2]!.trim();
      if (term.startsWith('!')) return !(term.slice(1) in l);
      return term in l;
    });
}

function matchesFields(object: KObject, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector
    .split(',')
    .filter(Boolean)
    .every((term) => {
      const m = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
      if (!m) return false;
      const value = m[1]!.split('.').reduce<any>((o, k) => (o == null ? undefined : o[k]), object);
      const equal = String(value ?? '') === m[3];
      return m[2] === '!=' ? !equal : equal;
    });
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const json = (v: unknown) => JSON.stringify(v);
const now = () => new Date().toISOString();
const suffix = () => randomBytes(3).toString('hex').slice(0, 5);
/** A UUID, as the API server gives every object. */
const newUid = () => randomUUID();
const isReady = (p: KObject) => p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;
const terminating = (o: KObject) => Boolean(o.metadata.deletionTimestamp);

/** `maxSurge`/`maxUnavailable` as counts: percentages round up for the surge, down for unavailability. */
function rollingBounds(deployment: KObject, desired: number): { maxSurge: number; maxUnavailable: number } {
  const rolling = deployment.spec.strategy?.rollingUpdate ?? {};
  const resolve = (value: unknown, fallback: string, roundUp: boolean) => {
    const v = value ?? fallback;
    if (typeof v === 'number') return v;
    const pct = (Number(String(v).replace('%', '')) / 100) * desired;
    return roundUp ? Math.ceil(pct) : Math.floor(pct);
  };
  const maxSurge = resolve(rolling.maxSurge, '25%', true);
  let maxUnavailable = resolve(rolling.maxUnavailable, '25%', false);
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

/** A pod just scheduled on the fake node, its containers being created. */
function pendingPodStatus(spec: Record<string, any>) {
  return {
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: now() }],
    containerStatuses: (spec.containers ?? []).map((c: any) => ({
      name: c.name,
      image: c.image,
      imageID: '',
      ready: false,
      restartCount: 0,
      started: false,
      state: { waiting: { reason: 'ContainerCreating' } },
    })),
  };
}

const SAFE_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];

/**
 * The Pod Security Standards checks (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
 * of a pod spec at `level`, each as the admission controller words it.
 */
export function podSecurityViolations(spec: Record<string, any>, level: string): string[] {
  if (level !== 'baseline' && level !== 'restricted') return [];
  const containers: any[] = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  const names = (list: any[]) => list.map((c) => `"${c.name}"`).join(', ');
  const plural = (list: any[]) => (list.length === 1 ? 'container' : 'containers');
  const out: string[] = [];
  const host = ['hostNetwork', 'hostPID', 'hostIPC'].filter((k) => spec[k] === true);
  if (host.length) out.push(`host namespaces (${host.map((k) => `${k}=true`).join(', ')})`);
  const privileged = containers.filter((c) => c.securityContext?.privileged === true);
  if (privileged.length) out.push(`privileged (${plural(privileged)} ${names(privileged)} must not set securityContext.privileged=true)`);
  const hostPath = (spec.volumes ?? []).filter((v: any) => v.hostPath);
  if (hostPath.length) out.push(`hostPath volumes (${hostPath.map((v: any) => `"${v.name}"`).join(', ')})`);
  if (level === 'baseline') return out;

  const pod = spec.securityContext ?? {};
  const badVolumes = (spec.volumes ?? []).filter(
    (v: any) => !v.hostPath && !Object.keys(v).some((k) => SAFE_VOLUMES.includes(k) || k === 'name'),
  );
  if (badVolumes.length) out.push(`restricted volume types (volumes ${badVolumes.map((v: any) => `"${v.name}"`).join(', ')})`);
  const escalating = containers.filter((c) => c.securityContext?.allowPrivilegeEscalation !== false);
  if (escalating.length)
    out.push(
      `allowPrivilegeEscalation != false (${plural(escalating)} ${names(escalating)} must set securityContext.allowPrivilegeEscalation=false)`,
    );
  const capable = containers.filter(
    (c) =>
      !(c.securityContext?.capabilities?.drop ?? []).includes('ALL') ||
      (c.securityContext?.capabilities?.add ?? []).some((a: string) => a !== 'NET_BIND_SERVICE'),
  );
  if (capable.length)
    out.push(`unrestricted capabilities (${plural(capable)} ${names(capable)} must set securityContext.capabilities.drop=["ALL"])`);
  const rootish = containers.filter((c) => (c.securityContext?.runAsNonRoot ?? pod.runAsNonRoot) !== true);
  if (rootish.length)
    out.push(`runAsNonRoot != true (pod or ${plural(rootish)} ${names(rootish)} must set securityContext.runAsNonRoot=true)`);
  const root = containers.filter((c) => (c.securityContext?.runAsUser ?? pod.runAsUser) === 0);
  if (root.length) out.push(`runAsUser=0 (pod or ${plural(root)} ${names(root)} must not set runAsUser=0)`);
  const seccompOk = (p: any) => p?.type === 'RuntimeDefault' || p?.type === 'Localhost';
  const noSeccomp = containers.filter((c) => !seccompOk(c.securityContext?.seccompProfile ?? pod.seccompProfile));
  if (noSeccomp.length)
    out.push(
      `seccompProfile (pod or ${plural(noSeccomp)} ${names(noSeccomp)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    );
  return out;
}

interface Watcher {
  resource: ResourceType;
  namespace: string | undefined;
  labelSelector: string | undefined;
  fieldSelector: string | undefined;
  res: ServerResponse;
}

interface PodSim {
  behaviour: PodBehaviour;
  job?: JobBehaviour;
  age: number;
}

/** One exec into a pod, as the fake served it. */
export interface ExecRecord {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  tty: boolean;
  stdin: boolean;
  /** The channel protocol agreed (`v5.channel.k8s.io` or `v4.channel.k8s.io`). */
  protocol: string;
  /** Every terminal size the client sent on channel 4, in order. */
  resizes: Array<{ Width: number; Height: number }>;
}

export interface FakeKubeApiOptions {
  /** Controller tick (pods advance one state per tick). Default 40 ms. */
  tickMs?: number;
  /** End every watch stream after this long (clients then fall back to polling). */
  closeWatchesAfterMs?: number;
  /** How long one second of a pod's termination grace period lasts here. Default 2 ms (30 s: 60 ms). */
  graceSecondMs?: number;
}

const SERVICE_ACCOUNT = 'system:serviceaccount:slipway:slipway';

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  /** How the pods of a Deployment behave (decided when each pod is created). */
  deploymentBehaviour: (deployment: KObject) => PodBehaviour = () => 'ready';
  /** Whether CloudNativePG's operator brings a Cluster up (its status then says it is ready). */
  clusterBehaviour: (cluster: KObject) => 'ready' | 'never-ready' = () => 'ready';
  /** How a Job's pod ends. */
  jobBehaviour: (job: KObject) => JobBehaviour = () => ({ outcome: 'succeed' });
  /** Usage of a pod for metrics.k8s.io; null answers 404 (no metrics-server installed). */
  podMetrics: ((pod: KObject) => { cpu: string; memory: string }) | null = () => ({ cpu: '10m', memory: '64Mi' });
  /** A reason to answer 503 to everything (an unreachable or broken API server). */
  unavailable = false;
  /** Requests never answered (a hung API server or a dead connection); `stop()` ends them. */
  stall: (request: RecordedRequest) => boolean = () => false;
  /** Requests answered only once the returned promise resolves (a slow API server); undefined: at once. */
  hold: (request: RecordedRequest) => Promise<void> | undefined = () => undefined;
  /** Namespaces the caller has no right to touch (RBAC): every request into them answers 403. */
  readonly forbiddenNamespaces = new Set<string>();
  /** Finer RBAC: true answers 403 Forbidden. */
  forbidden: (access: Access) => boolean = () => false;
  /** A validating admission webhook for pods: a message rejects the pod (403 "denied the request"). */
  podAdmission: ((pod: KObject) => string | null) | null = null;
  /** The exec channel protocols the fake speaks, preferred first (a test may leave only v4). */
  execProtocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
  /** Every exec: where, what, with which protocol, and each terminal size the client sent. */
  readonly execs: ExecRecord[] = [];
  /** More environment for exec'd commands (e.g. where a test's PostgreSQL stands in for an instance pod's). */
  execEnv: Record<string, string> = {};
  /** Every change of a Deployment's ReplicaSets, in order (to check surge and availability bounds). */
  readonly rolloutSteps: RolloutStep[] = [];

  private readonly store = new Map<string, KObject>();
  private readonly sims = new Map<string, PodSim>();
  private readonly logs = new Map<string, string>();
  /** Terminating pods: when their grace period ends. */
  private readonly graceEnds = new Map<string, number>();
  /** `follow=true` log readers of a pod: how much of its log each has been sent. */
  private readonly logFollowers = new Map<string, Set<{ res: ServerResponse; sent: number }>>();
  private readonly watchers = new Set<Watcher>();
  private readonly execSockets = new Set<WebSocket>();
  private readonly execServer = new WebSocketServer({
    noServer: true,
    maxPayload: 1024 * 1024,
    handleProtocols: (offered) => this.execProtocols.find((p) => offered.has(p)) ?? false,
  });
  private resourceVersion = 1;
  private timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly server: Server,
    private readonly options: FakeKubeApiOptions,
  ) {}

  static async start(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
    const server = createServer((req, res) => void fake.handle(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => fake.upgrade(req, socket, head));
    const fake = new FakeKubeApi(server, options);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake.timer = setInterval(() => fake.tick(), options.tickMs ?? 40);
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A KubeConfig pointing at this server (token auth, plain HTTP). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'tester', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'tester', namespace: 'default' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** The stored object (`plural` e.g. `deployments`), or undefined. */
  get(plural: string, namespace: string | undefined, name: string): KObject | undefined {
    return this.store.get(this.storeKey(resourceOf(plural), namespace, name));
  }

  list(plural: string, namespace?: string): KObject[] {
    const r = resourceOf(plural);
    return [...this.store.values()].filter((o) => o.kind === r.kind && (namespace === undefined || o.metadata.namespace === namespace));
  }

  /** Requests that applied (server-side) an object of this kind. */
  applies(kind?: string): RecordedRequest[] {
    return this.requests.filter(
      (r) =>
        r.method === 'PATCH' &&
        r.contentType === 'application/apply-patch+yaml' &&
        (kind === undefined || (r.body as KObject | null)?.kind === kind),
    );
  }

  /** Stores an object as an administrator would (`kubectl apply` with its own field manager), e.g. a labelled namespace. */
  seed(plural: string, object: KObject, manager = 'kubectl'): KObject {
    const resource = resourceOf(plural);
    const namespace = resource.namespaced ? object.metadata.namespace : undefined;
    return this.applyObject(
      resource,
      namespace,
      object.metadata.name,
      { apiVersion: groupVersion(resource), kind: resource.kind, ...object },
      manager,
      true,
    );
  }

  /** Sets an object's status as its controller would (e.g. CloudNativePG's on a Backup). */
  setStatus(plural: string, namespace: string, name: string, status: Record<string, unknown>): KObject {
    const object = this.get(plural, namespace, name);
    if (!object) throw new Error(`no ${plural} ${namespace}/${name}`);
    return this.put(plural, { ...object, status });
  }

  /** Appends to a running pod's log (what its container prints); followers receive it. */
  appendPodLog(namespace: string, pod: string, text: string): void {
    const key = this.storeKey(resourceOf('pods'), namespace, pod);
    this.writeLog(key, (this.logs.get(key) ?? '') + text, false);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const ws of this.execSockets) ws.terminate();
    this.execServer.close();
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
    for (const followers of this.logFollowers.values()) for (const f of followers) f.res.end();
    this.logFollowers.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- HTTP ------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString();
    let body: unknown = raw || null;
    try {
      if (raw) body = JSON.parse(raw);
    } catch {
      /* recorded as text */
    }
    const contentType = req.headers['content-type']?.split(';')[0]?.trim() ?? null;
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, query, contentType, body };
    this.requests.push(recorded);
    if (this.stall(recorded)) return;
    await this.hold(recorded);
    try {
      if (this.unavailable) throw new HttpError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      this.route(req.method ?? 'GET', url.pathname, query, contentType, body, raw, res);
    } catch (error) {
      const e =
        error instanceof HttpError
          ? error
          : error instanceof ApplyConflict
            ? new HttpError(409, 'Conflict', error.message)
            : new HttpError(500, 'InternalError', String(error));
      this.send(res, e.code, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: e.message,
        reason: e.reason,
        code: e.code,
      });
    }
  }

  private send(res: ServerResponse, code: number, body: unknown) {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(json(body));
  }

  private authorize(access: Access) {
    const refused = (access.namespace !== undefined && this.forbiddenNamespaces.has(access.namespace)) || this.forbidden(access);
    if (!refused) return;
    const what = access.name
      ? `${access.resource}${access.group ? `.${access.group}` : ''} "${access.name}"`
      : `${access.resource}${access.group ? `.${access.group}` : ''}`;
    throw new HttpError(
      403,
      'Forbidden',
      `${what} is forbidden: User "${SERVICE_ACCOUNT}" cannot ${access.verb} resource "${access.resource}" in API group "${access.group}"${access.namespace ? ` in the namespace "${access.namespace}"` : ' at the cluster scope'}`,
    );
  }

  private route(
    method: string,
    path: string,
    query: Record<string, string>,
    contentType: string | null,
    body: any,
    raw: string,
    res: ServerResponse,
  ) {
    if (path === '/version') {
      return this.send(res, 200, {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-fake',
        gitCommit: 'fake',
        gitTreeState: 'clean',
        buildDate: '2024-01-01T00:00:00Z',
        goVersion: 'go1.22',
        compiler: 'gc',
        platform: 'linux/amd64',
      });
    }
    if (path === '/api') return this.send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === '/apis') {
      const groups = [...new Set(RESOURCES.filter((r) => r.group).map((r) => r.group)), 'metrics.k8s.io'];
      return this.send(res, 200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: groups.map((g) => {
          const v = g === 'metrics.k8s.io' ? 'v1beta1' : 'v1';
          return {
            name: g,
            versions: [{ groupVersion: `${g}/${v}`, version: v }],
            preferredVersion: { groupVersion: `${g}/${v}`, version: v },
          };
        }),
      });
    }
    const m = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))(?:\/(.*))?$/.exec(path);
    if (!m) throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${path})`);
    const gv = m[1] ?? `${m[2]}/${m[3]}`;
    const segments = (m[4] ?? '').split('/').filter(Boolean).map(decodeURIComponent);
    if (gv === 'metrics.k8s.io/v1beta1') return this.metrics(segments, res);
    if (segments.length === 0) {
      const resources = RESOURCES.filter((r) => groupVersion(r) === gv);
      if (resources.length === 0) throw new HttpError(404, 'NotFound', `no API group version ${gv}`);
      return this.send(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: gv,
        resources: resources.flatMap((r) => [
          {
            name: r.name,
            singularName: r.kind.toLowerCase(),
            namespaced: r.namespaced,
            kind: r.kind,
            verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
          },
          ...(r.name === 'deployments'
            ? [
                {
                  name: 'deployments/scale',
                  singularName: '',
                  namespaced: true,
                  group: 'autoscaling',
                  version: 'v1',
                  kind: 'Scale',
                  verbs: ['get', 'patch', 'update'],
                },
              ]
            : []),
          ...(r.name === 'pods' ? [{ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] }] : []),
        ]),
      });
    }
    let namespace: string | undefined;
    let rest = segments;
    if (segments[0] === 'namespaces' && segments.length >= 3) {
      namespace = segments[1];
      rest = segments.slice(2);
    }
    const [plural, name, sub] = rest;
    const resource = resourceByKey.get(`${gv}/${plural}`);
    if (!resource) throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${path})`);
    if (resource.namespaced && name !== undefined && namespace === undefined)
      throw new HttpError(404, 'NotFound', `${resource.name} must be namespaced`);
    const verb: Access['verb'] =
      method === 'GET'
        ? name === undefined
          ? query.watch === 'true' || query.watch === '1'
            ? 'watch'
            : 'list'
          : 'get'
        : method === 'POST'
          ? 'create'
          : method === 'PUT'
            ? 'update'
            : method === 'PATCH'
              ? 'patch'
              : 'delete';
    this.authorize({
      verb,
      resource: sub ? `${resource.name}/${sub}` : resource.name,
      group: resource.group,
      namespace: resource.namespaced ? namespace : undefined,
      name,
    });

    if (name === undefined) {
      if (method === 'POST') return this.send(res, 201, this.create(resource, namespace, body, query));
      if (method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', `${method} on a collection is not supported by the fake`);
      if (verb === 'watch') return this.openWatch(resource, namespace, query, res);
      const items = [...this.store.values()].filter(
        (o) =>
          o.kind === resource.kind &&
          (namespace === undefined || o.metadata.namespace === namespace) &&
          matchesLabels(o.metadata.labels, query.labelSelector) &&
          matchesFields(o, query.fieldSelector),
      );
      return this.send(res, 200, {
        apiVersion: gv,
        kind: `${resource.kind}List`,
        metadata: { resourceVersion: String(this.resourceVersion) },
        items,
      });
    }
    const key = this.storeKey(resource, namespace, name);
    const existing = this.store.get(key);
    const notFound = () => new HttpError(404, 'NotFound', `${qualified(resource)} "${name}" not found`);

    if (sub === 'log' && resource.name === 'pods' && method === 'GET') {
      if (!existing) throw notFound();
      res.writeHead(200, { 'content-type': 'text/plain' });
      const text = this.logs.get(key) ?? '';
      const phase = existing.status?.phase;
      if (query.follow !== 'true' || phase === 'Succeeded' || phase === 'Failed') return res.end(text);
      // Following a running container: what it printed so far, then each new line, until it ends.
      res.write(text);
      const follower = { res, sent: text.length };
      const followers = this.logFollowers.get(key) ?? new Set();
      followers.add(follower);
      this.logFollowers.set(key, followers);
      res.on('close', () => followers.delete(follower));
      return;
    }
    if (sub === 'scale' && resource.name === 'deployments') {
      if (!existing) throw notFound();
      if (method === 'PATCH') {
        if (contentType !== 'application/merge-patch+json')
          throw new HttpError(415, 'UnsupportedMediaType', `the fake takes merge patches of scale, not ${contentType}`);
        this.checkResourceVersion(resource, existing, body);
        const replicas = body?.spec?.replicas;
        if (typeof replicas !== 'number' || replicas < 0)
          throw new HttpError(
            422,
            'Invalid',
            `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${json(replicas)}: must be greater than or equal to 0`,
          );
        this.updateObject(resource, key, { ...existing, spec: { ...existing.spec, replicas } }, query.fieldManager ?? 'unknown');
      } else if (method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', `${method} scale`);
      const d = this.store.get(key)!;
      return this.send(res, 200, {
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { name, namespace, resourceVersion: d.metadata.resourceVersion, uid: d.metadata.uid },
        spec: { replicas: d.spec.replicas },
        status: { replicas: d.status?.replicas ?? 0, selector: '' },
      });
    }
    if (sub !== undefined) throw new HttpError(404, 'NotFound', `subresource ${sub} is not simulated`);

    switch (method) {
      case 'GET':
        if (!existing) throw notFound();
        return this.send(res, 200, existing);
      case 'DELETE': {
        if (!existing) throw notFound();
        const options = { ...(body && typeof body === 'object' ? body : {}), ...query };
        const gone = this.deleteObject(key, {
          gracePeriodSeconds: options.gracePeriodSeconds !== undefined ? Number(options.gracePeriodSeconds) : undefined,
          propagationPolicy: options.propagationPolicy,
        });
        if (gone)
          return this.send(res, 200, {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Success',
            details: { name, kind: resource.name, uid: existing.metadata.uid },
          });
        return this.send(res, 200, this.store.get(key));
      }
      case 'PUT': {
        if (!existing) throw notFound();
        if (!body || typeof body !== 'object' || body.metadata?.name !== name)
          throw new HttpError(400, 'BadRequest', `the body of a PUT must be the ${resource.kind} "${name}"`);
        this.checkResourceVersion(resource, existing, body);
        const next: KObject = {
          ...structuredClone(body),
          metadata: { ...body.metadata, ...this.serverMetadata(existing) },
          ...(existing.status ? { status: existing.status } : {}),
        };
        return this.send(res, 200, this.updateObject(resource, key, next, query.fieldManager ?? 'unknown'));
      }
      case 'PATCH':
        if (contentType === 'application/apply-patch+yaml') {
          if (!query.fieldManager)
            throw new HttpError(
              400,
              'BadRequest',
              'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            );
          if (!body || typeof body !== 'object')
            throw new HttpError(400, 'BadRequest', `the fake parses apply bodies as JSON only: ${raw.slice(0, 60)}`);
          const force = query.force === 'true';
          return this.send(res, 200, this.applyObject(resource, namespace, name, body, query.fieldManager, force));
        }
        if (contentType === 'application/merge-patch+json') {
          if (!existing) throw notFound();
          this.checkResourceVersion(resource, existing, body);
          const next = mergePatch(existing, body);
          next.metadata = { ...next.metadata, ...this.serverMetadata(existing) };
          return this.send(res, 200, this.updateObject(resource, key, next, query.fieldManager ?? 'unknown'));
        }
        throw new HttpError(415, 'UnsupportedMediaType', `the fake takes server-side apply and merge patches, not ${contentType}`);
      default:
        throw new HttpError(405, 'MethodNotAllowed', `${method} is not supported by the fake`);
    }
  }

  private storeKey(resource: ResourceType, namespace: string | undefined, name: string) {
    return `${keyOf(resource)}|${resource.namespaced ? namespace : ''}|${name}`;
  }

  /** What a client cannot set: identity, version, deletion state (status is kept by the callers). */
  private serverMetadata(existing: KObject): Record<string, any> {
    const {
      uid,
      creationTimestamp,
      resourceVersion,
      generation,
      deletionTimestamp,
      deletionGracePeriodSeconds,
      managedFields,
      namespace,
      name,
    } = existing.metadata;
    return Object.fromEntries(
      Object.entries({
        uid,
        creationTimestamp,
        resourceVersion,
        generation,
        deletionTimestamp,
        deletionGracePeriodSeconds,
        managedFields,
        namespace,
        name,
      }).filter(([, v]) => v !== undefined),
    );
  }

  /** Optimistic concurrency: a write naming a resourceVersion must name the current one. */
  private checkResourceVersion(resource: ResourceType, existing: KObject, body: any) {
    const wanted = body?.metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== null && String(wanted) !== existing.metadata.resourceVersion) {
      throw new HttpError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${qualified(resource)} "${existing.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
  }

  /** A new object may only go into a namespace that exists and is not being deleted. */
  private admitNew(resource: ResourceType, namespace: string | undefined, name: string) {
    if (!resource.namespaced) return;
    const ns = this.store.get(this.storeKey(resourceOf('namespaces'), undefined, namespace!));
    if (!ns) throw new HttpError(404, 'NotFound', `namespaces "${namespace}" not found`);
    if (terminating(ns))
      throw new HttpError(
        403,
        'Forbidden',
        `${qualified(resource)} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      );
  }

  /** Pod Security admission and the test's webhook, as for a pod being created. */
  private admitPod(pod: KObject) {
    const ns = this.store.get(this.storeKey(resourceOf('namespaces'), undefined, pod.metadata.namespace));
    const level = ns?.metadata.labels?.['pod-security.kubernetes.io/enforce'];
    const version = ns?.metadata.labels?.['pod-security.kubernetes.io/enforce-version'] ?? 'latest';
    const violations = level ? podSecurityViolations(pod.spec ?? {}, level) : [];
    if (violations.length) {
      throw new HttpError(
        403,
        'Forbidden',
        `pods "${pod.metadata.name}" is forbidden: violates PodSecurity "${level}:${version}": ${violations.join(', ')}`,
      );
    }
    const denied = this.podAdmission?.(pod);
    if (denied) throw new HttpError(403, 'Forbidden', `admission webhook "pods.policy.fake" denied the request: ${denied}`);
  }

  /** The checks of the API server's validation that the driver depends on. */
  private validate(resource: ResourceType, next: KObject, existing: KObject | undefined) {
    const invalid = (detail: string) =>
      new HttpError(422, 'Invalid', `${kindQualified(resource)} "${next.metadata.name}" is invalid: ${detail}`);
    if (resource.kind === 'Deployment') {
      const selector = next.spec?.selector;
      const selectorText = `v1.LabelSelector{MatchLabels:map[string]string{${Object.entries(selector?.matchLabels ?? {})
        .map(([k, v]) => `"${k}":"${v}"`)
        .join(', ')}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}`;
      if (existing && json(existing.spec?.selector) !== json(selector))
        throw invalid(`spec.selector: Invalid value: ${selectorText}: field is immutable`);
      const labels = next.spec?.template?.metadata?.labels ?? {};
      if (!selector?.matchLabels || Object.keys(selector.matchLabels).length === 0) throw invalid('spec.selector: Required value');
      if (!Object.entries(selector.matchLabels).every(([k, v]) => labels[k] === v)) {
        throw invalid(`spec.template.metadata.labels: Invalid value: ${json(labels)}: \`selector\` does not match template \`labels\``);
      }
      const rolling = next.spec?.strategy?.rollingUpdate;
      if (
        rolling &&
        (rolling.maxSurge === 0 || rolling.maxSurge === '0%') &&
        (rolling.maxUnavailable === 0 || rolling.maxUnavailable === '0%')
      ) {
        throw invalid('spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0');
      }
    }
    if (resource.kind === 'Job' && existing && json(existing.spec?.template) !== json(next.spec?.template)) {
      throw invalid('spec.template: Invalid value: field is immutable');
    }
    if (resource.kind === 'Secret' && existing?.immutable && json(existing.data ?? {}) !== json(next.data ?? {})) {
      throw new HttpError(
        422,
        'Invalid',
        `Secret "${next.metadata.name}" is invalid: data: Forbidden: field is immutable when \`immutable\` is set`,
      );
    }
  }

  private normalize(resource: ResourceType, object: KObject): KObject {
    const out = structuredClone(object);
    if (resource.kind === 'Secret' && out.stringData) {
      out.data = { ...(out.data ?? {}) };
      for (const [k, v] of Object.entries(out.stringData)) out.data[k] = Buffer.from(String(v)).toString('base64');
      delete out.stringData;
    }
    return out;
  }

  /** POST: a new object (pods go through admission). */
  private create(resource: ResourceType, namespace: string | undefined, body: any, query: Record<string, string>): KObject {
    if (!body || typeof body !== 'object' || !body.metadata?.name)
      throw new HttpError(400, 'BadRequest', 'the fake needs metadata.name on a create');
    const name = body.metadata.name as string;
    const key = this.storeKey(resource, namespace, name);
    if (this.store.has(key)) throw new HttpError(409, 'AlreadyExists', `${qualified(resource)} "${name}" already exists`);
    this.admitNew(resource, namespace, name);
    const object = this.normalize(resource, {
      ...body,
      metadata: { ...body.metadata, namespace: resource.namespaced ? namespace : undefined },
    });
    if (resource.kind === 'Pod') this.admitPod(object);
    this.validate(resource, object, undefined);
    const created = this.withCreationMetadata(resource, object);
    created.metadata.managedFields = recordUpdate(null, created, query.fieldManager ?? 'unknown', groupVersion(resource), now());
    const stored = this.write(resource, key, created);
    if (resource.kind === 'Pod') this.sims.set(key, { behaviour: 'ready', age: 0 });
    return stored;
  }

  private withCreationMetadata(resource: ResourceType, object: KObject): KObject {
    return {
      ...object,
      metadata: { ...object.metadata, uid: newUid(), creationTimestamp: now(), ...(object.spec ? { generation: 1 } : {}) },
      ...(resource.kind === 'Namespace' ? { spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } } : {}),
      ...(['Deployment', 'Job', 'ReplicaSet'].includes(resource.kind) ? { status: {} } : {}),
      ...(resource.kind === 'Pod' ? { spec: { ...object.spec, nodeName: 'fake-node' }, status: pendingPodStatus(object.spec ?? {}) } : {}),
    };
  }

  /** Server-side apply: creates, or merges the applied configuration under `manager`'s field ownership. */
  private applyObject(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    body: KObject,
    manager: string,
    force: boolean,
  ): KObject {
    if (body.kind !== resource.kind || body.metadata?.name !== name)
      throw new HttpError(400, 'BadRequest', `body ${body.kind}/${body.metadata?.name} does not match ${resource.kind}/${name}`);
    if (resource.namespaced && body.metadata.namespace && body.metadata.namespace !== namespace)
      throw new HttpError(400, 'BadRequest', 'namespace mismatch');
    const key = this.storeKey(resource, namespace, name);
    const existing = this.store.get(key);
    if (existing) this.checkResourceVersion(resource, existing, body);
    else this.admitNew(resource, namespace, name);
    const applied = this.normalize(resource, body);
    delete applied.metadata.resourceVersion;
    const merged = serverSideApply(existing ?? null, applied, manager, force, groupVersion(resource), now());
    if (!existing) {
      const object = { ...merged, metadata: { ...merged.metadata, namespace: resource.namespaced ? namespace : undefined } };
      if (resource.kind === 'Pod') this.admitPod(object);
      this.validate(resource, object, undefined);
      const stored = this.write(resource, key, this.withCreationMetadata(resource, object));
      if (resource.kind === 'Pod') this.sims.set(key, { behaviour: 'ready', age: 0 });
      return stored;
    }
    const next: KObject = {
      ...merged,
      metadata: { ...merged.metadata, ...this.serverMetadata(existing), managedFields: merged.metadata.managedFields },
    };
    if (existing.status) next.status = existing.status;
    this.validate(resource, next, existing);
    return this.write(resource, key, next);
  }

  /** PUT, merge patch or scale: validated, ownership of what changed moves to `manager`. */
  private updateObject(resource: ResourceType, key: string, next: KObject, manager: string): KObject {
    const existing = this.store.get(key)!;
    next = this.normalize(resource, next);
    this.validate(resource, next, existing);
    next.metadata.managedFields = recordUpdate(existing, next, manager, groupVersion(resource), now());
    return this.write(resource, key, next);
  }

  /**
   * Stores a new version: resourceVersion, generation on a spec change, watch event. An object
   * being deleted whose last finalizer went is removed.
   */
  private write(resource: ResourceType, key: string, next: KObject): KObject {
    const previous = this.store.get(key);
    const metadata: Record<string, any> = { ...next.metadata, resourceVersion: String(++this.resourceVersion) };
    if (previous && json(previous.spec) !== json(next.spec) && resource.kind !== 'Namespace')
      metadata.generation = (previous.metadata.generation ?? 0) + 1;
    const stored = { ...next, apiVersion: groupVersion(resource), kind: resource.kind, metadata };
    this.store.set(key, stored);
    this.notify(previous ? 'MODIFIED' : 'ADDED', stored);
    if (terminating(stored) && !(stored.metadata.finalizers ?? []).length && resource.kind !== 'Pod' && resource.kind !== 'Namespace')
      this.remove(key);
    return stored;
  }

  /** Controller writes (status, a ReplicaSet's replicas): no validation, no field manager. */
  private put(plural: string, object: KObject): KObject {
    const resource = resourceOf(plural);
    return this.write(resource, this.storeKey(resource, object.metadata.namespace, object.metadata.name), object);
  }

  /** Sets a pod's whole log so far; followers get what is new, and their stream ends with the container. */
  private writeLog(key: string, text: string, ended: boolean) {
    this.logs.set(key, text);
    for (const follower of this.logFollowers.get(key) ?? []) {
      follower.res.write(text.slice(follower.sent));
      follower.sent = text.length;
      if (ended) follower.res.end();
    }
    if (ended) this.logFollowers.delete(key);
  }

  /**
   * A DELETE: a pod stays for its grace period, an object with finalizers (or deleted in the
   * Foreground) until they are done, a namespace until it is empty; anything else goes now and
   * the garbage collector deletes its dependents (Background, the default but for Jobs, whose
   * API default orphans their pods). Returns whether the object is gone.
   */
  private deleteObject(key: string, options: { gracePeriodSeconds?: number; propagationPolicy?: string }): boolean {
    const object = this.store.get(key)!;
    const resource = resourceOf(RESOURCES.find((r) => r.kind === object.kind)!.name);
    if (object.kind === 'Pod') {
      const grace = options.gracePeriodSeconds ?? object.spec?.terminationGracePeriodSeconds ?? 30;
      if (grace === 0 || !object.spec?.nodeName) {
        this.remove(key);
        return true;
      }
      if (terminating(object)) return false;
      this.graceEnds.set(key, Date.now() + grace * (this.options.graceSecondMs ?? 2));
      this.write(resource, key, {
        ...object,
        metadata: {
          ...object.metadata,
          deletionTimestamp: new Date(Date.now() + grace * 1000).toISOString(),
          deletionGracePeriodSeconds: grace,
        },
      });
      return false;
    }
    if (terminating(object)) return false;
    if (object.kind === 'Namespace') {
      this.write(resource, key, {
        ...object,
        metadata: { ...object.metadata, deletionTimestamp: now(), deletionGracePeriodSeconds: 0 },
        status: { phase: 'Terminating' },
      });
      return false;
    }
    const policy = options.propagationPolicy ?? (object.kind === 'Job' ? 'Orphan' : 'Background');
    if (policy === 'Orphan') {
      for (const dependent of this.dependents(object)) {
        const refs = dependent.metadata.ownerReferences.filter((r: any) => r.uid !== object.metadata.uid);
        this.put(RESOURCES.find((r) => r.kind === dependent.kind)!.name, {
          ...dependent,
          metadata: { ...dependent.metadata, ownerReferences: refs.length ? refs : undefined },
        });
      }
    }
    const finalizers = [...(object.metadata.finalizers ?? []), ...(policy === 'Foreground' ? ['foregroundDeletion'] : [])];
    if (finalizers.length === 0) {
      this.remove(key);
      return true;
    }
    this.write(resource, key, {
      ...object,
      metadata: { ...object.metadata, finalizers, deletionTimestamp: now(), deletionGracePeriodSeconds: 0 },
    });
    return false;
  }

  private dependents(owner: KObject): KObject[] {
    return [...this.store.values()].filter((o) => (o.metadata.ownerReferences ?? []).some((r: any) => r.uid === owner.metadata.uid));
  }

  /** The object leaves the store (grace period and finalizers done). */
  private remove(key: string) {
    const object = this.store.get(key);
    if (!object) return;
    for (const follower of this.logFollowers.get(key) ?? []) follower.res.end();
    this.logFollowers.delete(key);
    this.store.delete(key);
    this.sims.delete(key);
    this.graceEnds.delete(key);
    this.notify('DELETED', { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.resourceVersion) } });
  }

  /** Garbage collection, finalizers, namespace termination, grace periods: one pass. */
  private collect() {
    const uids = new Set([...this.store.values()].map((o) => o.metadata.uid));
    for (const [key, o] of [...this.store]) {
      if (!this.store.has(key)) continue;
      const owners = o.metadata.ownerReferences ?? [];
      if (owners.length && !terminating(o) && owners.every((r: any) => !uids.has(r.uid)))
        this.deleteObject(key, { propagationPolicy: 'Background' });
    }
    for (const [key, o] of [...this.store]) {
      if (!terminating(o) || !this.store.has(key)) continue;
      if (o.kind === 'Namespace') {
        const contents = [...this.store].filter(([, c]) => c.metadata.namespace === o.metadata.name);
        if (contents.length === 0) this.remove(key);
        for (const [k, c] of contents) if (!terminating(c)) this.deleteObject(k, { propagationPolicy: 'Background' });
      } else if (o.metadata.finalizers?.includes('foregroundDeletion')) {
        const dependents = this.dependents(o);
        for (const d of dependents) {
          if (!terminating(d))
            this.deleteObject(
              this.storeKey(
                RESOURCES.find((r) => r.kind === d.kind)!,
                d.metadata.namespace,
                d.metadata.name,
              ),
              { propagationPolicy: 'Foreground' },
            );
        }
        if (dependents.length === 0) {
          const finalizers = o.metadata.finalizers.filter((f: string) => f !== 'foregroundDeletion');
          this.write(
            RESOURCES.find((r) => r.kind === o.kind)!,
            key,
            { ...o, metadata: { ...o.metadata, finalizers: finalizers.length ? finalizers : undefined } },
          );
        }
      }
    }
    for (const [key, at] of [...this.graceEnds]) if (Date.now() >= at) this.remove(key);
  }

  private openWatch(resource: ResourceType, namespace: string | undefined, query: Record<string, string>, res: ServerResponse) {
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const watcher: Watcher = { resource, namespace, labelSelector: query.labelSelector, fieldSelector: query.fieldSelector, res };
    this.watchers.add(watcher);
    res.on('close', () => this.watchers.delete(watcher));
    if (!query.resourceVersion) {
      for (const o of this.store.values()) if (this.watches(watcher, o)) res.write(`${json({ type: 'ADDED', object: o })}\n`);
    }
    const limit = this.options.closeWatchesAfterMs ?? (query.timeoutSeconds ? Number(query.timeoutSeconds) * 1000 : undefined);
    if (limit !== undefined)
      setTimeout(() => {
        this.watchers.delete(watcher);
        res.end();
      }, limit).unref();
  }

  private watches(w: Watcher, o: KObject) {
    return (
      o.kind === w.resource.kind &&
      (w.namespace === undefined || o.metadata.namespace === w.namespace) &&
      matchesLabels(o.metadata.labels, w.labelSelector) &&
      matchesFields(o, w.fieldSelector)
    );
  }

  private notify(type: string, object: KObject) {
    for (const w of this.watchers) if (this.watches(w, object)) w.res.write(`${json({ type, object })}\n`);
  }

  private metrics(segments: string[], res: ServerResponse) {
    if (!this.podMetrics) throw new HttpError(404, 'NotFound', 'the server could not find the requested resource');
    const namespace = segments[0] === 'namespaces' ? segments[1] : undefined;
    const pods = this.list('pods', namespace).filter((p) => p.status?.phase === 'Running');
    const usage = this.podMetrics;
    return this.send(res, 200, {
      kind: 'PodMetricsList',
      apiVersion: 'metrics.k8s.io/v1beta1',
      metadata: { selfLink: '' },
      items: pods.map((p) => ({
        metadata: { name: p.metadata.name, namespace: p.metadata.namespace, selfLink: '', creationTimestamp: now() },
        timestamp: now(),
        window: '30s',
        containers: (p.spec?.containers ?? []).map((c: any) => ({ name: c.name, usage: usage(p) })),
      })),
    });
  }

  // ---- exec ------------------------------------------------------------------------------

  /** `GET /api/v1/namespaces/{ns}/pods/{name}/exec` upgraded to a WebSocket, as the API server proxies it to the kubelet. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    this.requests.push({ method: 'GET', path: url.pathname, query, contentType: null, body: null });
    const refuse = (code: number, reason: string) =>
      socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    if (!m) return refuse(404, 'Not Found');
    const namespace = decodeURIComponent(m[1]!);
    const podName = decodeURIComponent(m[2]!);
    try {
      this.authorize({ verb: 'create', resource: 'pods/exec', group: '', namespace, name: podName });
    } catch {
      return refuse(403, 'Forbidden');
    }
    const pod = this.get('pods', namespace, podName);
    if (!pod) return refuse(404, 'Not Found');
    if (pod.status?.phase !== 'Running') return refuse(400, 'Bad Request');
    const command = url.searchParams.getAll('command');
    if (command.length === 0) return refuse(400, 'Bad Request');
    this.execServer.handleUpgrade(req, socket, head, (ws) => {
      const record: ExecRecord = {
        namespace,
        pod: podName,
        container: query.container ?? pod.spec.containers[0].name,
        command,
        tty: query.tty === 'true',
        stdin: query.stdin === 'true',
        protocol: ws.protocol,
        resizes: [],
      };
      this.execs.push(record);
      this.runExec(ws, record);
    });
  }

  /** Runs the command and speaks the channel protocol: 0 stdin, 1 stdout, 2 stderr, 3 the status, 4 resize, 255 close (v5). */
  private runExec(ws: WebSocket, record: ExecRecord) {
    this.execSockets.add(ws);
    const dir = mkdtempSync(join(tmpdir(), 'fake-pod-'));
    const asNobody = process.getuid?.() === 0;
    if (asNobody) chownSync(dir, 65534, 65534);
    const send = (channel: number, bytes: Buffer | string) => {
      if (ws.readyState === 1) ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(bytes)]), { binary: true });
    };
    let child: ReturnType<typeof spawn> | null = null;
    const pendingInput: Buffer[] = [];
    let inputEnded = false;
    const start = (size: { Width: number; Height: number } | null) => {
      if (child) return;
      const quoted = record.command.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
      const [file, args] = size
        ? ['script', ['-qfec', `stty rows ${size.Height} cols ${size.Width} 2>/dev/null; exec ${quoted}`, '/dev/null']]
        : [record.command[0]!, record.command.slice(1)];
      child = spawn(file, args, {
        cwd: dir,
        env: {
          PATH: '/usr/local/bin:/usr/bin:/bin',
          HOME: dir,
          HOSTNAME: record.pod,
          ...this.execEnv,
          ...(size ? { TERM: 'xterm' } : {}),
        },
        detached: true,
        ...(asNobody ? { uid: 65534, gid: 65534 } : {}),
      });
      child.stdout!.on('data', (d: Buffer) => send(1, d));
      child.stderr!.on('data', (d: Buffer) => send(record.tty ? 1 : 2, d));
      child.stdin!.on('error', () => {});
      for (const chunk of pendingInput.splice(0)) child.stdin!.write(chunk);
      if (inputEnded || !record.stdin) child.stdin!.end();
      child.on('close', (code, signal) => {
        const status =
          code === 0
            ? { metadata: {}, status: 'Success' }
            : {
                metadata: {},
                status: 'Failure',
                message: `command terminated with non-zero exit code: exit status ${code ?? signal}`,
                reason: 'NonZeroExitCode',
                details: { causes: [{ reason: 'ExitCode', message: String(code ?? 137) }] },
              };
        send(3, JSON.stringify(status));
        ws.close(1000);
      });
    };
    ws.on('message', (data, isBinary) => {
      const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      if (!isBinary || bytes.length === 0) return;
      const payload = bytes.subarray(1);
      if (bytes[0] === 0) {
        if (child) child.stdin!.write(payload);
        else pendingInput.push(Buffer.from(payload));
      } else if (bytes[0] === 255 && payload[0] === 0 && record.protocol === 'v5.channel.k8s.io') {
        inputEnded = true;
        child?.stdin!.end();
      } else if (bytes[0] === 4) {
        const size = JSON.parse(payload.toString('utf8')) as { Width: number; Height: number };
        record.resizes.push(size);
        if (record.tty) start(size);
      }
    });
    ws.on('close', () => {
      this.execSockets.delete(ws);
      if (child?.pid && child.exitCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
    // A terminal is sized by the client's first resize message (kubectl sends it at once); without one, the default.
    if (record.tty) setTimeout(() => start({ Width: 80, Height: 24 }), 1000);
    else start(null);
  }

  // ---- controllers -----------------------------------------------------------------------

  private tick() {
    try {
      for (const rs of this.list('replicasets')) this.reconcileReplicaSet(rs);
      for (const d of this.list('deployments')) this.reconcileDeployment(d);
      for (const j of this.list('jobs')) this.reconcileJob(j);
      for (const set of this.list('statefulsets')) this.reconcileStatefulSet(set);
      for (const c of this.list('clusters')) this.reconcileCnpgCluster(c);
      for (const [key, sim] of this.sims) this.advancePod(key, sim);
      this.collect();
    } catch (error) {
      // A broken controller must fail the test run loudly, once.
      if (this.timer) clearInterval(this.timer);
      throw error;
    }
  }

  private podKey(namespace: string, name: string) {
    return this.storeKey(resourceOf('pods'), namespace, name);
  }

  private owned(plural: string, owner: KObject): KObject[] {
    return this.list(plural, owner.metadata.namespace).filter((o) =>
      o.metadata.ownerReferences?.some((r: any) => r.uid === owner.metadata.uid),
    );
  }

  /** Creates a controller's pod, through admission (throws the 403 a real API server answers). */
  private createPod(owner: KObject, name: string, labels: Record<string, string>, sim: PodSim) {
    const template = owner.spec.template;
    const pod: KObject = {
      metadata: {
        name,
        namespace: owner.metadata.namespace,
        labels,
        annotations: { ...(template.metadata?.annotations ?? {}) },
        uid: newUid(),
        creationTimestamp: now(),
        ownerReferences: [
          {
            apiVersion: owner.apiVersion,
            kind: owner.kind,
            name: owner.metadata.name,
            uid: owner.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...structuredClone(template.spec), nodeName: 'fake-node' },
      status: pendingPodStatus(template.spec),
    };
    this.admitPod(pod);
    const key = this.podKey(owner.metadata.namespace, name);
    this.sims.set(key, sim);
    this.put('pods', pod);
  }

  /**
   * The StatefulSet controller, minimally: pods `<name>-<ordinal>` up to spec.replicas (through
   * admission), each ordinal's claims from volumeClaimTemplates (`<template>-<name>-<ordinal>`,
   * kept when the pods go), readyReplicas from the ready pods.
   */
  private reconcileStatefulSet(set: KObject) {
    if (terminating(set)) return;
    const want = set.spec.replicas ?? 1;
    const { namespace, name } = set.metadata;
    const podName = (i: number) => `${name}-${i}`;
    for (let i = 0; i < want; i++) {
      for (const template of set.spec.volumeClaimTemplates ?? []) {
        const claim = `${template.metadata.name}-${name}-${i}`;
        if (!this.get('persistentvolumeclaims', namespace, claim))
          this.put('persistentvolumeclaims', {
            metadata: { name: claim, namespace, labels: { ...(template.metadata.labels ?? {}) }, uid: newUid(), creationTimestamp: now() },
            spec: structuredClone(template.spec),
            status: { phase: 'Bound' },
          });
      }
      if (this.get('pods', namespace, podName(i))) continue;
      try {
        this.createPod(set, podName(i), { ...(set.spec.template.metadata?.labels ?? {}) }, { behaviour: 'ready', age: 0 });
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        this.event(
          set,
          'FailedCreate',
          `create Pod ${podName(i)} in StatefulSet ${name} failed error: ${error.message}`,
          'statefulset-controller',
        );
        break;
      }
    }
    for (const pod of this.owned('pods', set))
      if (Number(pod.metadata.name.slice(name.length + 1)) >= want && !terminating(pod))
        this.deleteObject(this.podKey(namespace, pod.metadata.name), {});
    const pods = this.owned('pods', set).filter((p) => !terminating(p));
    const ready = pods.filter(isReady).length;
    const status = {
      replicas: pods.length,
      readyReplicas: ready,
      availableReplicas: ready,
      currentReplicas: pods.length,
      observedGeneration: set.metadata.generation,
    };
    if (json(status) !== json(set.status)) this.put('statefulsets', { ...set, status });
  }

  /** CloudNativePG's operator, as far as its Cluster's status goes: ready, or hibernated (`cnpg.io/hibernation: on`). */
  private reconcileCnpgCluster(cluster: KObject) {
    if (terminating(cluster)) return;
    const instances = cluster.spec?.instances ?? 1;
    const hibernated = cluster.metadata.annotations?.['cnpg.io/hibernation'] === 'on';
    const ready = !hibernated && this.clusterBehaviour(cluster) === 'ready';
    const status = {
      instances,
      readyInstances: ready ? instances : 0,
      phase: hibernated ? 'Cluster in hibernation' : ready ? 'Cluster in healthy state' : 'Setting up primary',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'ClusterIsReady' : 'ClusterIsNotReady' }],
    };
    if (json(status) !== json(cluster.status)) this.put('clusters', { ...cluster, status });
    // Its first instance's pod (`<cluster>-1`, container `postgres`), running while it is ready: what `exec` reaches.
    const { namespace, name } = cluster.metadata;
    if (ready && !this.get('pods', namespace, `${name}-1`))
      this.put('pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `${name}-1`,
          namespace,
          uid: newUid(),
          creationTimestamp: now(),
          labels: { ...(cluster.spec?.inheritedMetadata?.labels ?? {}), 'cnpg.io/cluster': name, 'cnpg.io/instanceRole': 'primary' },
          ownerReferences: [{ apiVersion: cluster.apiVersion, kind: 'Cluster', name, uid: cluster.metadata.uid, controller: true }],
        },
        spec: { nodeName: 'fake-node', containers: [{ name: 'postgres', image: 'ghcr.io/cloudnative-pg/postgresql:17' }] },
        status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now() }] },
      });
  }

  /** The ReplicaSet controller: its pod count follows spec.replicas; a pod it may not create is a FailedCreate. */
  private reconcileReplicaSet(rs: KObject) {
    if (terminating(rs)) return;
    const want = rs.spec.replicas ?? 1;
    const live = () => this.owned('pods', rs).filter((p) => !terminating(p));
    const pods = live();
    let failure: string | null = null;
    if (pods.length < want) {
      const deployment = this.list('deployments', rs.metadata.namespace).find((d) =>
        rs.metadata.ownerReferences?.some((r: any) => r.uid === d.metadata.uid),
      );
      for (let i = pods.length; i < want; i++) {
        try {
          this.createPod(
            rs,
            `${rs.metadata.name}-${suffix()}`,
            { ...(rs.spec.template.metadata?.labels ?? {}) },
            { behaviour: deployment ? this.deploymentBehaviour(deployment) : 'ready', age: 0 },
          );
        } catch (error) {
          if (!(error instanceof HttpError)) throw error;
          failure = error.message;
          this.event(rs, 'FailedCreate', `Error creating: ${error.message}`, 'replicaset-controller');
          break;
        }
      }
    } else if (pods.length > want) {
      // Not-ready pods go first, then the newest.
      const order = [...pods].sort(
        (a, b) => Number(isReady(a)) - Number(isReady(b)) || b.metadata.creationTimestamp.localeCompare(a.metadata.creationTimestamp),
      );
      for (const p of order.slice(0, pods.length - want)) this.deleteObject(this.podKey(p.metadata.namespace, p.metadata.name), {});
    }
    const after = live();
    const ready = after.filter(isReady).length;
    const previousFailure = rs.status?.conditions?.find((c: any) => c.type === 'ReplicaFailure');
    const stillFailing = failure ?? (after.length < want ? previousFailure?.message : null);
    const status = {
      replicas: after.length,
      fullyLabeledReplicas: after.length,
      readyReplicas: ready,
      availableReplicas: ready,
      observedGeneration: rs.metadata.generation,
      ...(stillFailing
        ? {
            conditions: [
              {
                type: 'ReplicaFailure',
                status: 'True',
                reason: 'FailedCreate',
                message: stillFailing,
                lastTransitionTime: previousFailure?.lastTransitionTime ?? now(),
              },
            ],
          }
        : {}),
    };
    if (json(status) !== json(rs.status))
      this.put('replicasets', {
        ...this.store.get(this.storeKey(resourceOf('replicasets'), rs.metadata.namespace, rs.metadata.name))!,
        status,
      });
  }

  /**
   * The Deployment controller's rolling update: a ReplicaSet per pod template; the new one
   * grows while all of them stay within replicas + maxSurge, old ones shrink while the
   * available pods stay at least replicas - maxUnavailable (unavailable old pods go first).
   */
  private reconcileDeployment(d: KObject) {
    if (terminating(d)) return;
    const desired = d.spec.replicas ?? 1;
    const hash = createHash('sha256').update(json(d.spec.template)).digest('hex').slice(0, 10);
    const rsKey = (rs: KObject) => this.storeKey(resourceOf('replicasets'), rs.metadata.namespace, rs.metadata.name);
    const fresh = (rs: KObject) => this.store.get(rsKey(rs))!;
    const replicasOf = (rs: KObject) => fresh(rs).spec.replicas ?? 0;
    const setReplicas = (rs: KObject, n: number) => {
      const current = fresh(rs);
      if ((current.spec.replicas ?? 0) !== n)
        this.put('replicasets', {
          ...current,
          spec: { ...current.spec, replicas: n },
          metadata: { ...current.metadata, generation: (current.metadata.generation ?? 1) + 1 },
        });
    };
    const sets = this.owned('replicasets', d);
    let current = sets.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash);
    if (!current) {
      const revision = Math.max(0, ...sets.map((rs) => Number(rs.metadata.annotations?.['deployment.kubernetes.io/revision'] ?? 0))) + 1;
      const labels = { ...(d.spec.template.metadata?.labels ?? {}), 'pod-template-hash': hash };
      current = this.put('replicasets', {
        metadata: {
          name: `${d.metadata.name}-${hash}`,
          namespace: d.metadata.namespace,
          labels,
          uid: newUid(),
          creationTimestamp: now(),
          generation: 1,
          annotations: { 'deployment.kubernetes.io/revision': String(revision) },
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              name: d.metadata.name,
              uid: d.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          replicas: 0,
          selector: { matchLabels: { ...d.spec.selector.matchLabels, 'pod-template-hash': hash } },
          template: {
            metadata: { ...structuredClone(d.spec.template.metadata ?? {}), labels },
            spec: structuredClone(d.spec.template.spec),
          },
        },
        status: { replicas: 0 },
      });
    }
    const old = sets
      .filter((rs) => rs.metadata.uid !== current!.metadata.uid)
      .sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp));
    const all = [current, ...old];
    const sum = (f: (rs: KObject) => number) => all.reduce((n, rs) => n + f(fresh(rs)), 0);
    const available = (rs: KObject) => fresh(rs).status?.availableReplicas ?? 0;
    const { maxSurge, maxUnavailable } = rollingBounds(d, desired);

    if (d.spec.strategy?.type === 'Recreate') {
      for (const rs of old) setReplicas(rs, 0);
      if (old.every((rs) => this.owned('pods', rs).length === 0)) setReplicas(current, desired);
    } else {
      // The new ReplicaSet: up to replicas + maxSurge in all.
      if (replicasOf(current) > desired) setReplicas(current, desired);
      else if (replicasOf(current) < desired) {
        const room = desired + maxSurge - sum((rs) => rs.spec.replicas ?? 0);
        if (room > 0) setReplicas(current, replicasOf(current) + Math.min(room, desired - replicasOf(current)));
      }
      // Old ReplicaSets: never below replicas - maxUnavailable available.
      if (old.some((rs) => replicasOf(rs) > 0)) {
        const minAvailable = desired - maxUnavailable;
        const newUnavailable = replicasOf(current) - available(current);
        let cleanup = sum((rs) => rs.spec.replicas ?? 0) - minAvailable - newUnavailable;
        for (const rs of old) {
          if (cleanup <= 0) break;
          const unhealthy = replicasOf(rs) - available(rs);
          if (unhealthy <= 0) continue;
          const n = Math.min(cleanup, unhealthy);
          setReplicas(rs, replicasOf(rs) - n);
          cleanup -= n;
        }
        let removable = sum(available) - minAvailable;
        for (const rs of old) {
          if (removable <= 0) break;
          const n = Math.min(replicasOf(rs), removable);
          setReplicas(rs, replicasOf(rs) - n);
          removable -= n;
        }
      }
    }
    // Old ReplicaSets beyond revisionHistoryLimit go once they have no pods.
    const retired = old.filter((rs) => replicasOf(rs) === 0 && this.owned('pods', rs).length === 0);
    for (const rs of retired.slice(0, Math.max(0, retired.length - (d.spec.revisionHistoryLimit ?? 10))))
      this.deleteObject(rsKey(rs), { propagationPolicy: 'Background' });
    const remaining = all.filter((rs) => this.store.has(rsKey(rs)));

    const step: RolloutStep = {
      namespace: d.metadata.namespace,
      deployment: d.metadata.name,
      desired,
      newReplicas: replicasOf(current),
      oldReplicas: old.filter((rs) => this.store.has(rsKey(rs))).reduce((n, rs) => n + replicasOf(rs), 0),
      available: remaining.reduce((n, rs) => n + available(rs), 0),
    };
    const last = [...this.rolloutSteps].reverse().find((s) => s.namespace === step.namespace && s.deployment === step.deployment);
    if (!last || json(last) !== json(step)) this.rolloutSteps.push(step);

    const total = (f: (s: any) => number) => remaining.reduce((n, rs) => n + f(fresh(rs).status ?? {}), 0);
    const availableNow = total((s) => s.availableReplicas ?? 0);
    const failure = remaining.map((rs) => fresh(rs).status?.conditions?.find((c: any) => c.type === 'ReplicaFailure')).find(Boolean);
    const updated = fresh(current).status?.replicas ?? 0;
    const complete = updated === desired && total((s) => s.replicas ?? 0) === desired && availableNow === desired;
    const previous = (type: string) => d.status?.conditions?.find((c: any) => c.type === type);
    const condition = (type: string, status: string, reason: string, message: string) => {
      const before = previous(type);
      const same = before?.status === status;
      return {
        type,
        status,
        reason,
        message,
        lastUpdateTime: same && before.reason === reason ? before.lastUpdateTime : now(),
        lastTransitionTime: same ? before.lastTransitionTime : now(),
      };
    };
    const status = {
      observedGeneration: d.metadata.generation,
      replicas: total((s) => s.replicas ?? 0),
      updatedReplicas: updated,
      readyReplicas: total((s) => s.readyReplicas ?? 0),
      availableReplicas: availableNow,
      unavailableReplicas: Math.max(0, remaining.reduce((n, rs) => n + replicasOf(rs), 0) - availableNow),
      conditions: [
        condition(
          'Available',
          availableNow >= desired - maxUnavailable ? 'True' : 'False',
          availableNow >= desired - maxUnavailable ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
          availableNow >= desired - maxUnavailable
            ? 'Deployment has minimum availability.'
            : 'Deployment does not have minimum availability.',
        ),
        condition(
          'Progressing',
          'True',
          complete ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
          complete
            ? `ReplicaSet "${current.metadata.name}" has successfully progressed.`
            : `ReplicaSet "${current.metadata.name}" is progressing.`,
        ),
        ...(failure ? [condition('ReplicaFailure', 'True', 'FailedCreate', failure.message)] : []),
      ],
    };
    if (json(status) !== json(d.status))
      this.put('deployments', {
        ...this.store.get(this.storeKey(resourceOf('deployments'), d.metadata.namespace, d.metadata.name))!,
        status,
      });
  }

  private reconcileJob(j: KObject) {
    if (terminating(j) || j.status?.conditions?.some((c: any) => c.status === 'True')) return;
    const key = this.storeKey(resourceOf('jobs'), j.metadata.namespace, j.metadata.name);
    const startTime = j.status?.startTime ?? now();
    const pods = this.owned('pods', j);
    const overdue = j.spec.activeDeadlineSeconds !== undefined && Date.now() - Date.parse(startTime) > j.spec.activeDeadlineSeconds * 1000;
    if (pods.length === 0 && !overdue) {
      const behaviour = this.jobBehaviour(j);
      try {
        this.createPod(
          j,
          `${j.metadata.name}-${suffix()}`,
          {
            ...(j.spec.template.metadata?.labels ?? {}),
            'job-name': j.metadata.name,
            'batch.kubernetes.io/job-name': j.metadata.name,
            'controller-uid': j.metadata.uid,
          },
          { behaviour: behaviour.outcome === 'image-pull-error' ? 'image-pull-error' : 'ready', job: behaviour, age: 0 },
        );
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        this.event(j, 'FailedCreate', `Error creating: ${error.message}`, 'job-controller');
        if (!j.status?.startTime) this.put('jobs', { ...j, status: { startTime, active: 0 } });
        return;
      }
      this.put('jobs', { ...j, status: { startTime, active: 1 } });
      return;
    }
    const terminated = pods[0]?.status?.containerStatuses?.[0]?.state?.terminated;
    let condition: Record<string, string> | null = null;
    if (terminated)
      condition =
        terminated.exitCode === 0 ? { type: 'Complete', reason: 'Completed' } : { type: 'Failed', reason: 'BackoffLimitExceeded' };
    else if (overdue) condition = { type: 'Failed', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
    if (!condition) return;
    if (overdue && !terminated) for (const p of pods) this.deleteObject(this.podKey(p.metadata.namespace, p.metadata.name), {});
    this.put('jobs', {
      ...this.store.get(key)!,
      status: {
        startTime,
        completionTime: now(),
        active: 0,
        ...(condition.type === 'Complete' ? { succeeded: 1 } : { failed: 1 }),
        conditions: [{ ...condition, status: 'True', lastProbeTime: now(), lastTransitionTime: now() }],
      },
    });
  }

  private event(object: KObject, reason: string, message: string, component = 'kubelet') {
    const name = `${object.metadata.name}.${reason.toLowerCase()}`;
    const key = this.storeKey(resourceOf('events'), object.metadata.namespace, name);
    const existing = this.store.get(key);
    this.put('events', {
      metadata: {
        name,
        namespace: object.metadata.namespace,
        uid: existing?.metadata.uid ?? newUid(),
        creationTimestamp: existing?.metadata.creationTimestamp ?? now(),
      },
      involvedObject: {
        kind: object.kind,
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        uid: object.metadata.uid,
        apiVersion: object.apiVersion,
      },
      reason,
      message,
      type: 'Warning',
      count: (existing?.count ?? 0) + 1,
      source: { component, ...(component === 'kubelet' ? { host: 'fake-node' } : {}) },
      firstTimestamp: existing?.firstTimestamp ?? now(),
      lastTimestamp: now(),
    });
  }

  /** Moves a pod one step along its behaviour. */
  private advancePod(key: string, sim: PodSim) {
    const pod = this.store.get(key);
    if (!pod) {
      this.sims.delete(key);
      return;
    }
    sim.age += 1;
    const container = pod.spec.containers[0];
    const status = structuredClone(pod.status);
    const cs = status.containerStatuses[0];
    const startedAt = pod.metadata.creationTimestamp;
    const setReady = (ready: boolean) => {
      status.conditions = [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Initialized', status: 'True' },
        { type: 'ContainersReady', status: ready ? 'True' : 'False' },
        { type: 'Ready', status: ready ? 'True' : 'False' },
      ];
      cs.ready = ready;
    };
    if (sim.job && sim.behaviour === 'ready') {
      if (sim.age === 1) {
        status.phase = 'Running';
        cs.state = { running: { startedAt } };
        cs.started = true;
        // A running one-off prints its first line at once (a Job that hangs keeps printing nothing more).
        if (sim.job.logs?.length) this.writeLog(key, `${sim.job.logs[0]}\n`, false);
      } else if (sim.age === 2 && sim.job.outcome !== 'hang') {
        const exitCode = sim.job.outcome === 'succeed' ? 0 : (sim.job.exitCode ?? 1);
        this.writeLog(key, (sim.job.logs ?? []).map((l) => `${l}\n`).join(''), true);
        status.phase = exitCode === 0 ? 'Succeeded' : 'Failed';
        cs.state = { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: now() } };
        cs.started = false;
        setReady(false);
      } else return;
    } else if (sim.behaviour === 'ready') {
      if (sim.age !== 1) return;
      status.phase = 'Running';
      cs.state = { running: { startedAt } };
      cs.started = true;
      setReady(true);
    } else if (sim.behaviour === 'never-ready') {
      if (sim.age === 1) {
        status.phase = 'Running';
        cs.state = { running: { startedAt } };
        cs.started = true;
        setReady(false);
      } else if (sim.age % 3 === 0) {
        this.event(pod, 'Unhealthy', 'Readiness probe failed: HTTP probe failed with statuscode: 500');
        return;
      } else return;
    } else if (sim.behaviour === 'crash-loop') {
      if (sim.age > 6) return;
      // What a container that dies at start prints (the driver reads it back as its previous log).
      if (sim.age === 1) this.writeLog(key, "node:internal/modules/cjs/loader:1080\nError: Cannot find module 'express'\n", false);
      status.phase = 'Running';
      cs.restartCount = sim.age;
      cs.lastState = { terminated: { exitCode: 1, reason: 'Error', startedAt, finishedAt: now() } };
      cs.state = {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off 10s restarting failed container=${container.name} pod=${pod.metadata.name}`,
        },
      };
      setReady(false);
      this.event(pod, 'BackOff', 'Back-off restarting failed container');
    } else if (sim.behaviour === 'image-pull-error') {
      if (sim.age === 1) {
        cs.state = {
          waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${container.image}": 401 Unauthorized` },
        };
        this.event(pod, 'Failed', `Failed to pull image "${container.image}": 401 Unauthorized`);
      } else if (sim.age === 3) {
        cs.state = { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.image}"` } };
      } else return;
    }
    this.put('pods', { ...pod, status });
  }
}
