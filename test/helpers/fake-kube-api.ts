/**
 * A fake Kubernetes API server on 127.0.0.1:<ephemeral> that speaks the real HTTP protocol
 * well enough for `@kubernetes/client-node`: discovery, GET/LIST with label and field
 * selectors, server-side apply (PATCH application/apply-patch+yaml), merge patch of a
 * Deployment or its scale, DELETE, `watch=true` streams, pod logs, events, metrics.k8s.io
 * and /version. A small controller turns Deployments and Jobs into pods whose behaviour a
 * test chooses (ready, never-ready, crash-loop, image-pull-error; Jobs succeed or fail with
 * log lines). Every request is recorded for assertions.
 *
 *   const kube = await FakeKubeApi.start();
 *   kube.deploymentBehaviour = (d) => d.metadata.labels['slipway.dev/process-type'] === 'web' ? 'never-ready' : 'ready';
 *   kube.jobBehaviour = () => ({ outcome: 'fail', exitCode: 3, logs: ['migrating', 'boom'] });
 *   new KubernetesRuntime({ kubeConfig: kube.kubeConfig(), ... });
 *   kube.requests.filter((r) => r.method === 'PATCH');
 *   await kube.stop();
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/* eslint-disable @typescript-eslint/no-explicit-any */
type KObject = Record<string, any> & { metadata: Record<string, any> };

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
  { group: 'apps', version: 'v1', name: 'deployments', kind: 'Deployment', namespaced: true },
  { group: 'batch', version: 'v1', name: 'jobs', kind: 'Job', namespaced: true },
  { group: 'networking.k8s.io', version: 'v1', name: 'ingresses', kind: 'Ingress', namespaced: true },
];

const groupVersion = (r: ResourceType) => (r.group ? `${r.group}/${r.version}` : r.version);
const keyOf = (r: ResourceType) => `${groupVersion(r)}/${r.name}`;
const resourceByKey = new Map(RESOURCES.map((r) => [keyOf(r), r]));
const resourceOf = (plural: string) => RESOURCES.find((r) => r.name === plural)!;

class HttpError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) { super(message); }
}

function matchesLabels(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  return selector.split(',').map((t) => t.trim()).filter(Boolean).every((term) => {
    let m: RegExpExecArray | null;
    if ((m = /^([^!=]+)!=(.*)$/.exec(term))) return l[m[1]!.trim()] !== m[2]!.trim();
    if ((m = /^([^!=]+)==?(.*)$/.exec(term))) return l[m[1]!.trim()] === m[2]!.trim();
    if (term.startsWith('!')) return !(term.slice(1) in l);
    return term in l;
  });
}

function matchesFields(object: KObject, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').filter(Boolean).every((term) => {
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

export interface FakeKubeApiOptions {
  /** Controller tick (pods advance one state per tick). Default 40 ms. */
  tickMs?: number;
  /** End every watch stream after this long (clients then fall back to polling). */
  closeWatchesAfterMs?: number;
}

export class FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  /** How the pods of a Deployment behave (decided when each pod is created). */
  deploymentBehaviour: (deployment: KObject) => PodBehaviour = () => 'ready';
  /** How a Job's pod ends. */
  jobBehaviour: (job: KObject) => JobBehaviour = () => ({ outcome: 'succeed' });
  /** Usage of a pod for metrics.k8s.io; null answers 404 (no metrics-server installed). */
  podMetrics: ((pod: KObject) => { cpu: string; memory: string }) | null = () => ({ cpu: '10m', memory: '64Mi' });
  /** A reason to answer 503 to everything (an unreachable or broken API server). */
  unavailable = false;
  /** Requests never answered (a hung API server or a dead connection); `stop()` ends them. */
  stall: (request: RecordedRequest) => boolean = () => false;

  private readonly store = new Map<string, KObject>();
  private readonly sims = new Map<string, PodSim>();
  private readonly logs = new Map<string, string>();
  /** `follow=true` log readers of a pod: how much of its log each has been sent. */
  private readonly logFollowers = new Map<string, Set<{ res: ServerResponse; sent: number }>>();
  private readonly watchers = new Set<Watcher>();
  private resourceVersion = 1;
  private timer: NodeJS.Timeout | null = null;

  private constructor(private readonly server: Server, private readonly options: FakeKubeApiOptions) {}

  static async start(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
    let fake!: FakeKubeApi;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeKubeApi(server, options);
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
    return this.requests.filter((r) => r.method === 'PATCH' && r.contentType === 'application/apply-patch+yaml'
      && (kind === undefined || (r.body as KObject | null)?.kind === kind));
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
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
    try { if (raw) body = JSON.parse(raw); } catch { /* recorded as text */ }
    const contentType = req.headers['content-type']?.split(';')[0]?.trim() ?? null;
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, query, contentType, body };
    this.requests.push(recorded);
    if (this.stall(recorded)) return;
    try {
      if (this.unavailable) throw new HttpError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      this.route(req.method ?? 'GET', url.pathname, query, contentType, body, raw, res);
    } catch (error) {
      const e = error instanceof HttpError ? error : new HttpError(500, 'InternalError', String(error));
      this.send(res, e.code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: e.message, reason: e.reason, code: e.code });
    }
  }

  private send(res: ServerResponse, code: number, body: unknown) {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(json(body));
  }

  private route(method: string, path: string, query: Record<string, string>, contentType: string | null, body: any, raw: string, res: ServerResponse) {
    if (path === '/version') {
      return this.send(res, 200, {
        major: '1', minor: '31', gitVersion: 'v1.31.0-fake', gitCommit: 'fake', gitTreeState: 'clean',
        buildDate: '2024-01-01T00:00:00Z', goVersion: 'go1.22', compiler: 'gc', platform: 'linux/amd64',
      });
    }
    if (path === '/api') return this.send(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === '/apis') {
      const groups = [...new Set(RESOURCES.filter((r) => r.group).map((r) => r.group)), 'metrics.k8s.io'];
      return this.send(res, 200, {
        kind: 'APIGroupList', apiVersion: 'v1',
        groups: groups.map((g) => {
          const v = g === 'metrics.k8s.io' ? 'v1beta1' : 'v1';
          return { name: g, versions: [{ groupVersion: `${g}/${v}`, version: v }], preferredVersion: { groupVersion: `${g}/${v}`, version: v } };
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
        kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv,
        resources: resources.flatMap((r) => [
          { name: r.name, singularName: r.kind.toLowerCase(), namespaced: r.namespaced, kind: r.kind, verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] },
          ...(r.name === 'deployments' ? [{ name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] }] : []),
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
    if (resource.namespaced && name !== undefined && namespace === undefined) throw new HttpError(404, 'NotFound', `${resource.name} must be namespaced`);

    if (name === undefined) {
      if (method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', `${method} on a collection is not supported by the fake`);
      if (query.watch === 'true' || query.watch === '1') return this.openWatch(resource, namespace, query, res);
      const items = [...this.store.values()].filter((o) => o.kind === resource.kind
        && (namespace === undefined || o.metadata.namespace === namespace)
        && matchesLabels(o.metadata.labels, query.labelSelector) && matchesFields(o, query.fieldSelector));
      return this.send(res, 200, { apiVersion: gv, kind: `${resource.kind}List`, metadata: { resourceVersion: String(this.resourceVersion) }, items });
    }
    const key = this.storeKey(resource, namespace, name);
    const existing = this.store.get(key);

    if (sub === 'log' && resource.name === 'pods' && method === 'GET') {
      if (!existing) throw new HttpError(404, 'NotFound', `pods "${name}" not found`);
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
      if (!existing) throw new HttpError(404, 'NotFound', `deployments.apps "${name}" not found`);
      if (method === 'PATCH') {
        if (contentType !== 'application/merge-patch+json') throw new HttpError(415, 'UnsupportedMediaType', `the fake takes merge patches of scale, not ${contentType}`);
        const replicas = body?.spec?.replicas;
        if (typeof replicas !== 'number') throw new HttpError(422, 'Invalid', 'spec.replicas required');
        this.update(resource, key, { ...existing, spec: { ...existing.spec, replicas } }, query.fieldManager, 'Update');
      } else if (method !== 'GET') throw new HttpError(405, 'MethodNotAllowed', `${method} scale`);
      const d = this.store.get(key)!;
      return this.send(res, 200, {
        apiVersion: 'autoscaling/v1', kind: 'Scale',
        metadata: { name, namespace, resourceVersion: d.metadata.resourceVersion, uid: d.metadata.uid },
        spec: { replicas: d.spec.replicas }, status: { replicas: d.status?.replicas ?? 0, selector: '' },
      });
    }
    if (sub !== undefined) throw new HttpError(404, 'NotFound', `subresource ${sub} is not simulated`);

    switch (method) {
      case 'GET':
        if (!existing) throw new HttpError(404, 'NotFound', `${resource.name} "${name}" not found`);
        return this.send(res, 200, existing);
      case 'DELETE':
        if (!existing) throw new HttpError(404, 'NotFound', `${resource.name} "${name}" not found`);
        this.remove(key);
        return this.send(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: resource.name, uid: existing.metadata.uid } });
      case 'PATCH':
        if (contentType === 'application/apply-patch+yaml') return this.send(res, 200, this.apply(resource, namespace, name, body, raw, query));
        if (contentType === 'application/merge-patch+json' && resource.name === 'deployments') {
          if (!existing) throw new HttpError(404, 'NotFound', `deployments.apps "${name}" not found`);
          return this.send(res, 200, this.update(resource, key, mergePatch(existing, body), query.fieldManager, 'Update'));
        }
        throw new HttpError(415, 'UnsupportedMediaType', `the fake only takes server-side apply for ${resource.name}, not ${contentType}`);
      default:
        throw new HttpError(405, 'MethodNotAllowed', `${method} is not supported by the fake`);
    }
  }

  private storeKey(resource: ResourceType, namespace: string | undefined, name: string) {
    return `${keyOf(resource)}|${resource.namespaced ? namespace : ''}|${name}`;
  }

  /** Server-side apply: creates, or replaces what the manager applied (status kept). */
  private apply(resource: ResourceType, namespace: string | undefined, name: string, body: any, raw: string, query: Record<string, string>): KObject {
    if (!query.fieldManager) throw new HttpError(400, 'BadRequest', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    if (!body || typeof body !== 'object') throw new HttpError(400, 'BadRequest', `the fake parses apply bodies as JSON only: ${raw.slice(0, 60)}`);
    if (body.kind !== resource.kind || body.metadata?.name !== name) throw new HttpError(400, 'BadRequest', `body ${body.kind}/${body.metadata?.name} does not match ${resource.kind}/${name}`);
    if (resource.namespaced && body.metadata.namespace && body.metadata.namespace !== namespace) throw new HttpError(400, 'BadRequest', 'namespace mismatch');
    if (resource.namespaced && !this.store.has(this.storeKey(resourceOf('namespaces'), undefined, namespace!))) {
      throw new HttpError(404, 'NotFound', `namespaces "${namespace}" not found`);
    }
    const key = this.storeKey(resource, namespace, name);
    const existing = this.store.get(key);
    const applied: KObject = structuredClone(body);
    if (resource.kind === 'Secret' && applied.stringData) {
      applied.data = { ...(applied.data ?? {}) };
      for (const [k, v] of Object.entries(applied.stringData)) applied.data[k] = Buffer.from(String(v)).toString('base64');
      delete applied.stringData;
    }
    if (!existing) {
      const created: KObject = {
        ...applied,
        metadata: {
          ...applied.metadata, namespace: resource.namespaced ? namespace : undefined, uid: randomBytes(16).toString('hex'),
          creationTimestamp: now(), ...(applied.spec ? { generation: 1 } : {}),
        },
        ...(resource.kind === 'Deployment' || resource.kind === 'Job' ? { status: {} } : {}),
      };
      return this.update(resource, key, created, query.fieldManager, 'Apply');
    }
    if (resource.kind === 'Secret' && existing.immutable && json(existing.data ?? {}) !== json(applied.data ?? {})) {
      throw new HttpError(422, 'Invalid', `Secret "${name}" is invalid: data: Forbidden: field is immutable when \`immutable\` is set`);
    }
    if (resource.kind === 'Job' && json(existing.spec?.template) !== json(applied.spec?.template)) {
      throw new HttpError(422, 'Invalid', `Job.batch "${name}" is invalid: spec.template: Invalid value: field is immutable`);
    }
    const merged: KObject = {
      ...existing, ...applied,
      metadata: { ...existing.metadata, labels: applied.metadata.labels, annotations: applied.metadata.annotations },
      ...(existing.status ? { status: existing.status } : {}),
    };
    return this.update(resource, key, merged, query.fieldManager, 'Apply');
  }

  /** Stores a new version: resourceVersion, generation on a spec change, managed fields, watch event. */
  private update(resource: ResourceType, key: string, next: KObject, manager: string | undefined, operation: 'Apply' | 'Update'): KObject {
    const previous = this.store.get(key);
    const metadata: Record<string, any> = { ...next.metadata, resourceVersion: String(++this.resourceVersion) };
    if (previous && json(previous.spec) !== json(next.spec)) metadata.generation = (previous.metadata.generation ?? 0) + 1;
    if (manager) {
      const others = (previous?.metadata.managedFields ?? []).filter((f: any) => !(f.manager === manager && f.operation === operation));
      metadata.managedFields = [...others, { manager, operation, apiVersion: groupVersion(resource), time: now(), fieldsType: 'FieldsV1', fieldsV1: {} }];
    }
    const stored = { ...next, apiVersion: groupVersion(resource), kind: resource.kind, metadata };
    this.store.set(key, stored);
    this.notify(previous ? 'MODIFIED' : 'ADDED', stored);
    return stored;
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

  /** Deletes an object and what depends on it (namespace contents, a Deployment's or Job's pods). */
  private remove(key: string) {
    const object = this.store.get(key);
    if (!object) return;
    for (const follower of this.logFollowers.get(key) ?? []) follower.res.end();
    this.logFollowers.delete(key);
    this.store.delete(key);
    this.sims.delete(key);
    this.notify('DELETED', { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.resourceVersion) } });
    for (const [k, o] of [...this.store]) {
      const dependent = (object.kind === 'Namespace' && o.metadata.namespace === object.metadata.name)
        || (o.metadata.ownerReferences ?? []).some((r: any) => r.uid === object.metadata.uid);
      if (dependent) this.remove(k);
    }
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
    if (limit !== undefined) setTimeout(() => { this.watchers.delete(watcher); res.end(); }, limit).unref();
  }

  private watches(w: Watcher, o: KObject) {
    return o.kind === w.resource.kind && (w.namespace === undefined || o.metadata.namespace === w.namespace)
      && matchesLabels(o.metadata.labels, w.labelSelector) && matchesFields(o, w.fieldSelector);
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
      kind: 'PodMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', metadata: { selfLink: '' },
      items: pods.map((p) => ({
        metadata: { name: p.metadata.name, namespace: p.metadata.namespace, selfLink: '', creationTimestamp: now() },
        timestamp: now(), window: '30s',
        containers: (p.spec?.containers ?? []).map((c: any) => ({ name: c.name, usage: usage(p) })),
      })),
    });
  }

  // ---- controller ------------------------------------------------------------------------

  private tick() {
    for (const d of this.list('deployments')) this.reconcileDeployment(d);
    for (const j of this.list('jobs')) this.reconcileJob(j);
    for (const [key, sim] of this.sims) this.advancePod(key, sim);
  }

  private podKey(namespace: string, name: string) {
    return this.storeKey(resourceOf('pods'), namespace, name);
  }

  private createPod(owner: KObject, name: string, labels: Record<string, string>, sim: PodSim) {
    const template = owner.spec.template;
    const pod: KObject = {
      metadata: {
        name, namespace: owner.metadata.namespace, labels, annotations: { ...(template.metadata?.annotations ?? {}) },
        uid: randomBytes(16).toString('hex'), creationTimestamp: now(),
        ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true }],
      },
      spec: { ...structuredClone(template.spec), nodeName: 'fake-node' },
      status: {
        phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: now() }],
        containerStatuses: (template.spec.containers ?? []).map((c: any) => ({
          name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, started: false,
          state: { waiting: { reason: 'ContainerCreating' } },
        })),
      },
    };
    const key = this.podKey(owner.metadata.namespace, name);
    this.sims.set(key, sim);
    this.update(resourceOf('pods'), key, pod, undefined, 'Update');
  }

  private ownedPods(owner: KObject) {
    return this.list('pods', owner.metadata.namespace).filter((p) => p.metadata.ownerReferences?.some((r: any) => r.uid === owner.metadata.uid));
  }

  private reconcileDeployment(d: KObject) {
    const hash = createHash('sha256').update(json(d.spec.template)).digest('hex').slice(0, 10);
    const pods = this.ownedPods(d);
    const current = pods.filter((p) => p.metadata.labels?.['pod-template-hash'] === hash);
    const old = pods.filter((p) => p.metadata.labels?.['pod-template-hash'] !== hash);
    const desired = d.spec.replicas ?? 1;
    for (let i = current.length; i < desired; i++) {
      const name = `${d.metadata.name}-${hash.slice(0, 8)}-${suffix()}`;
      this.createPod(d, name, { ...(d.spec.template.metadata?.labels ?? {}), 'pod-template-hash': hash }, { behaviour: this.deploymentBehaviour(d), age: 0 });
    }
    for (const extra of current.slice(desired)) this.remove(this.podKey(extra.metadata.namespace, extra.metadata.name));
    const isReady = (p: KObject) => p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
    const kept = current.slice(0, desired);
    // Zero downtime: old pods go only once every new one is ready.
    if (kept.length === desired && kept.every(isReady)) for (const p of old) this.remove(this.podKey(p.metadata.namespace, p.metadata.name));
    const all = this.ownedPods(d);
    const updated = all.filter((p) => p.metadata.labels?.['pod-template-hash'] === hash);
    const ready = all.filter(isReady).length;
    const status = {
      observedGeneration: d.metadata.generation,
      replicas: all.length, updatedReplicas: updated.length, readyReplicas: ready, availableReplicas: ready,
      unavailableReplicas: Math.max(0, desired - ready),
      conditions: [{ type: 'Available', status: ready >= desired ? 'True' : 'False', reason: 'MinimumReplicasAvailable', lastUpdateTime: d.status?.conditions?.[0]?.lastUpdateTime ?? now(), lastTransitionTime: d.status?.conditions?.[0]?.lastTransitionTime ?? now() }],
    };
    if (json(status) !== json(d.status)) this.update(resourceOf('deployments'), this.storeKey(resourceOf('deployments'), d.metadata.namespace, d.metadata.name), { ...d, status }, undefined, 'Update');
  }

  private reconcileJob(j: KObject) {
    if (j.status?.conditions?.some((c: any) => c.status === 'True')) return;
    const key = this.storeKey(resourceOf('jobs'), j.metadata.namespace, j.metadata.name);
    const startTime = j.status?.startTime ?? now();
    const pods = this.ownedPods(j);
    if (pods.length === 0) {
      const behaviour = this.jobBehaviour(j);
      this.createPod(j, `${j.metadata.name}-${suffix()}`, {
        ...(j.spec.template.metadata?.labels ?? {}), 'job-name': j.metadata.name, 'batch.kubernetes.io/job-name': j.metadata.name,
        'controller-uid': j.metadata.uid,
      }, { behaviour: behaviour.outcome === 'image-pull-error' ? 'image-pull-error' : 'ready', job: behaviour, age: 0 });
      return this.update(resourceOf('jobs'), key, { ...j, status: { startTime, active: 1 } }, undefined, 'Update');
    }
    const terminated = pods[0]!.status?.containerStatuses?.[0]?.state?.terminated;
    const overdue = j.spec.activeDeadlineSeconds !== undefined && Date.now() - Date.parse(startTime) > j.spec.activeDeadlineSeconds * 1000;
    let condition: Record<string, string> | null = null;
    if (terminated) condition = terminated.exitCode === 0 ? { type: 'Complete', reason: 'Completed' } : { type: 'Failed', reason: 'BackoffLimitExceeded' };
    else if (overdue) condition = { type: 'Failed', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
    if (!condition) return;
    if (overdue && !terminated) for (const p of pods) this.remove(this.podKey(p.metadata.namespace, p.metadata.name));
    this.update(resourceOf('jobs'), key, {
      ...j,
      status: {
        startTime, completionTime: now(), active: 0,
        ...(condition.type === 'Complete' ? { succeeded: 1 } : { failed: 1 }),
        conditions: [{ ...condition, status: 'True', lastProbeTime: now(), lastTransitionTime: now() }],
      },
    }, undefined, 'Update');
  }

  private event(pod: KObject, reason: string, message: string) {
    const name = `${pod.metadata.name}.${reason.toLowerCase()}`;
    const key = this.storeKey(resourceOf('events'), pod.metadata.namespace, name);
    const existing = this.store.get(key);
    this.update(resourceOf('events'), key, {
      metadata: { name, namespace: pod.metadata.namespace, uid: existing?.metadata.uid ?? randomBytes(16).toString('hex'), creationTimestamp: existing?.metadata.creationTimestamp ?? now() },
      involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, apiVersion: 'v1' },
      reason, message, type: 'Warning', count: (existing?.count ?? 0) + 1, source: { component: 'kubelet', host: 'fake-node' },
      firstTimestamp: existing?.firstTimestamp ?? now(), lastTimestamp: now(),
    }, undefined, 'Update');
  }

  /** Moves a pod one step along its behaviour. */
  private advancePod(key: string, sim: PodSim) {
    const pod = this.store.get(key);
    if (!pod) { this.sims.delete(key); return; }
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
      status.phase = 'Running';
      cs.restartCount = sim.age;
      cs.lastState = { terminated: { exitCode: 1, reason: 'Error', startedAt, finishedAt: now() } };
      cs.state = { waiting: { reason: 'CrashLoopBackOff', message: `back-off 10s restarting failed container=${container.name} pod=${pod.metadata.name}` } };
      setReady(false);
      this.event(pod, 'BackOff', 'Back-off restarting failed container');
    } else if (sim.behaviour === 'image-pull-error') {
      if (sim.age === 1) {
        cs.state = { waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${container.image}": 401 Unauthorized` } };
        this.event(pod, 'Failed', `Failed to pull image "${container.image}": 401 Unauthorized`);
      } else if (sim.age === 3) {
        cs.state = { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.image}"` } };
      } else return;
    }
    this.update(resourceOf('pods'), key, { ...pod, status }, undefined, 'Update');
  }
}
