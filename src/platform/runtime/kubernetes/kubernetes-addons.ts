/**
 * The Kubernetes driver of the add-on port (RUNTIME=kubernetes): each add-on's objects (see
 * addon-manifests.ts) applied server-side in its organization's namespace, its readiness read
 * from the cluster (the CloudNativePG Cluster's status, the StatefulSet's ready replicas) and
 * written on the add-on's row. The cluster keeps running them when the platform stops.
 */
import type { KubernetesObject, V1StatefulSet } from '@kubernetes/client-node';
import type { AddonBackend } from '../../addons/backend.js';
import { openCredentials, type AddonCredentials } from '../../addons/credentials.js';
import { findPlan } from '../../addons/plans.js';
import type { AddonRecord } from '../../addons/supervisor.js';
import type { SecretBox } from '../../crypto/secret-box.js';
import type { Db } from '../../db/database.js';
import {
  CNPG_API_VERSION,
  addonManifests,
  addonNetworkPolicy,
  addonObjectNames,
  type AddonObjectNames,
  type AddonObjectStore,
  type AddonTarget,
} from './addon-manifests.js';
import { describeError, isNotFound, type KubernetesCluster, type ObjectRef } from './cluster.js';
import { LABEL } from './names.js';
import { publishWebhookEvent } from '../../webhook-events.js';

export interface KubernetesAddonsOptions {
  db: Db;
  secrets: SecretBox;
  cluster: KubernetesCluster;
  /** The organization's namespace, made (with its isolation policy) as the runtime makes it. */
  namespaceOf(organizationSlug: string): string;
  ensureNamespace(namespace: string): Promise<void>;
  /** Where Postgres backups go; null: none (CloudNativePG keeps no backup without an object store). */
  objectStore: AddonObjectStore | null;
  backupIntervalHours: number;
  log: { warn(obj: object, msg: string): void };
  /** Between two readiness checks. Default 2 s. */
  pollIntervalMs?: number;
  /** How long a new add-on may take to be ready (images pulled, volumes bound). Default 15 min. */
  readyTimeoutMs?: number;
}

/** What is read of a CloudNativePG Cluster. */
type CnpgCluster = KubernetesObject & {
  spec?: { instances?: number };
  status?: { phase?: string; readyInstances?: number; conditions?: Array<{ type?: string; status?: string }> };
};

/** How a refused NetworkPolicy is marked on its add-on's `status_detail` (and found again). */
const POLICY_PENDING = 'NetworkPolicy not applied';
const POLICY_RETRY_MAX_MS = 60_000;

const ref = (apiVersion: string, kind: string, name: string, namespace: string): ObjectRef => ({ apiVersion, kind, name, namespace });

export class KubernetesAddons implements AddonBackend {
  readonly runs = 'kubernetes' as const;
  /** Add-ons whose readiness is being waited for: the wait's end. */
  private readonly waiting = new Map<string, AbortController>();
  /** Add-ons whose NetworkPolicy the cluster refused: the next attempt. */
  private readonly policyRetries = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly options: KubernetesAddonsOptions) {}

  /** Waits again for the add-ons a previous process left waiting. */
  async start(): Promise<void> {
    const rows = await this.options.db
      .selectFrom('addons')
      .select('id')
      .where('deleted_at', 'is', null)
      .where('status', '=', 'creating')
      .where('host', 'is not', null)
      .execute();
    for (const row of rows) this.awaitReady(row.id);
    await this.retryPolicies().catch((err: unknown) => this.options.log.warn({ err }, 'add-on policies not applied at start'));
  }

  /**
   * `bootstrap` replaces the Cluster a new add-on starts with (a restore's fork: recovered from its
   * source's object store); its readiness is followed the same way.
   */
  async provision(record: AddonRecord, bootstrap?: (target: AddonTarget, names: AddonObjectNames) => KubernetesObject): Promise<void> {
    const target = await this.target(record.id);
    const names = addonObjectNames(target);
    await oneLine(async () => {
      await this.options.ensureNamespace(target.namespace);
      for (const object of addonManifests(target, this.options.objectStore, this.options.backupIntervalHours))
        await this.options.cluster.apply(bootstrap && object.kind === 'Cluster' ? bootstrap(target, names) : object);
    });
    await this.options.db
      .updateTable('addons')
      .set({ host: names.host, status: 'creating', status_detail: 'waiting for the cluster', updated_at: new Date() })
      .where('id', '=', record.id)
      .execute();
    this.awaitReady(record.id);
  }

  restart(record: AddonRecord): Promise<void> {
    return this.provision(record);
  }

  /** Within a deletion's grace period: CloudNativePG hibernates the cluster, the StatefulSet has no pod; the volumes stay. */
  async stop(id: string): Promise<void> {
    this.waiting.get(id)?.abort();
    const target = await this.target(id);
    await oneLine(async () => {
      for (const object of addonManifests({ ...target, stopped: true }, this.options.objectStore, this.options.backupIntervalHours))
        await this.options.cluster.apply(object);
    });
  }

  async remove(id: string): Promise<void> {
    this.waiting.get(id)?.abort();
    const target = await this.target(id);
    const { base, secret, namespace } = addonObjectNames(target);
    const refs =
      target.kind === 'postgres'
        ? [ref(CNPG_API_VERSION, 'ScheduledBackup', base, namespace), ref(CNPG_API_VERSION, 'Cluster', base, namespace)]
        : [ref('apps/v1', 'StatefulSet', base, namespace), ref('v1', 'PersistentVolumeClaim', `data-${base}-0`, namespace)];
    // The Backups `POST …/backups` made (the ScheduledBackup's own go with it, their owner); their data stays in the store.
    if (target.kind === 'postgres') {
      const made = await this.options.cluster
        .list(CNPG_API_VERSION, 'Backup', namespace, `${LABEL.addonId}=${id}`)
        .catch((err: unknown) => (isNotFound(err) ? [] : Promise.reject(err)));
      for (const b of made) refs.push(ref(CNPG_API_VERSION, 'Backup', b.metadata!.name!, namespace));
    }
    refs.push(ref('v1', 'Service', base, namespace), ref('networking.k8s.io/v1', 'NetworkPolicy', base, namespace));
    refs.push(ref('v1', 'Secret', secret, namespace));
    for (const r of refs) await this.options.cluster.delete(r);
  }

  /** The new password in the Secret: CloudNativePG sets it on the managed role; Redis restarts with it. */
  async rotate(record: AddonRecord, _previous: AddonCredentials, next: AddonCredentials): Promise<void> {
    const target = { ...(await this.target(record.id)), credentials: next };
    await oneLine(async () => {
      for (const object of addonManifests(target, this.options.objectStore, this.options.backupIntervalHours))
        await this.options.cluster.apply(object);
    });
  }

  /**
   * Applies the add-on's NetworkPolicy for its attachments now. A cluster that refuses it leaves
   * the previous policy: a new attachment does not reach it yet, but a detached application still
   * would. So the refusal is written on the add-on (`status_detail`, the durable mark) and the policy
   * is applied again until it lands: with a growing delay in this process, and from the mark by the
   * sweep and at the next start should this process stop first.
   */
  async attachmentsChanged(id: string, attempt = 0): Promise<void> {
    clearTimeout(this.policyRetries.get(id));
    this.policyRetries.delete(id);
    const target = await this.target(id);
    const { db } = this.options;
    try {
      await this.options.cluster.apply(addonNetworkPolicy(target, addonObjectNames(target)));
      await db
        .updateTable('addons')
        .set({ status_detail: null, updated_at: new Date() })
        .where('id', '=', id)
        .where('status_detail', 'like', `${POLICY_PENDING}%`)
        .execute();
    } catch (err) {
      const detail = `${POLICY_PENDING} (the attachments' access is as before; retried until it is): ${describeError(err)}`;
      this.options.log.warn({ addonId: id, attempt }, detail);
      await db.updateTable('addons').set({ status_detail: detail, updated_at: new Date() }).where('id', '=', id).execute();
      if (this.stopped || target.stopped) return;
      const delay = Math.min(POLICY_RETRY_MAX_MS, (this.options.pollIntervalMs ?? 2000) * 2 ** attempt);
      const timer = setTimeout(() => {
        this.policyRetries.delete(id);
        void this.attachmentsChanged(id, attempt + 1).catch((e: unknown) => this.options.log.warn({ addonId: id, err: e }, 'policy retry'));
      }, delay);
      timer.unref();
      this.policyRetries.set(id, timer);
    }
  }

  /** The sweep: the policies a cluster refused that no retry of this process waits on (another process's, or before a restart). */
  async retryPolicies(): Promise<void> {
    const rows = await this.options.db
      .selectFrom('addons')
      .select('id')
      .where('host', 'is not', null)
      .where('deleted_at', 'is', null)
      .where('status_detail', 'like', `${POLICY_PENDING}%`)
      .execute();
    for (const row of rows) if (!this.policyRetries.has(row.id)) await this.attachmentsChanged(row.id);
  }

  async detach(): Promise<void> {
    this.stopped = true;
    for (const wait of this.waiting.values()) wait.abort();
    for (const timer of this.policyRetries.values()) clearTimeout(timer);
    this.policyRetries.clear();
  }

  shutdown(): Promise<void> {
    return this.detach();
  }

  /** What the manifests are made of: the row, its organization's namespace and its attachments. */
  async target(id: string): Promise<AddonTarget> {
    const { db, secrets } = this.options;
    const row = await db
      .selectFrom('addons as a')
      .innerJoin('organizations as o', 'o.id', 'a.organization_id')
      .select(['a.id', 'a.name', 'a.kind', 'a.plan', 'a.port', 'a.credentials_sealed', 'a.deleted_at', 'o.slug'])
      .where('a.id', '=', id)
      .executeTakeFirstOrThrow();
    const attached = await db
      .selectFrom('addon_attachments')
      .select(['application_id', 'environment_id'])
      .where('addon_id', '=', id)
      .orderBy('id')
      .execute();
    const plan = findPlan(row.kind, row.plan);
    if (!plan) throw new Error(`unknown plan ${row.plan}`);
    return {
      id: row.id,
      name: row.name,
      kind: row.kind,
      plan,
      port: row.port,
      namespace: this.options.namespaceOf(row.slug),
      credentials: openCredentials(secrets, row.credentials_sealed),
      attached: attached.map((a) => ({ applicationId: a.application_id, environmentId: a.environment_id })),
      stopped: row.deleted_at !== null,
    };
  }

  /** Follows the add-on until the cluster says it is ready (running) or the time is up (failed), in the background. */
  private awaitReady(id: string): void {
    if (this.stopped) return;
    this.waiting.get(id)?.abort();
    const controller = new AbortController();
    this.waiting.set(id, controller);
    void this.follow(id, controller.signal)
      .catch((err: unknown) => this.setStatus(id, 'failed', describeError(err)))
      .catch((err: unknown) => this.options.log.warn({ addonId: id, err }, 'add-on status not recorded'))
      .finally(() => {
        if (this.waiting.get(id) === controller) this.waiting.delete(id);
      });
  }

  private async follow(id: string, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 15 * 60_000);
    let detail = 'waiting for the cluster';
    while (!signal.aborted) {
      const target = await this.target(id);
      const { base, namespace } = addonObjectNames(target);
      const state = target.kind === 'postgres' ? await this.postgresState(base, namespace) : await this.redisState(base, namespace);
      if (signal.aborted) return;
      if (state.ready) return this.setStatus(id, 'running', null);
      if (Date.now() > deadline)
        return this.setStatus(id, 'failed', `not ready within ${Math.round((this.options.readyTimeoutMs ?? 900_000) / 1000)} s: ${detail}`);
      if (state.detail !== detail) {
        detail = state.detail;
        await this.setStatus(id, 'creating', detail);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollIntervalMs ?? 2000);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  /** Ready: the Cluster's Ready condition, every instance ready. Its phase says what it is doing meanwhile. */
  private async postgresState(name: string, namespace: string) {
    const cluster = await this.options.cluster.read<CnpgCluster>(ref(CNPG_API_VERSION, 'Cluster', name, namespace));
    if (!cluster) return { ready: false, detail: 'waiting for the Cluster to be created' };
    const status = cluster.status ?? {};
    const condition = (status.conditions ?? []).find((c) => c.type === 'Ready');
    const ready = condition?.status === 'True' && (status.readyInstances ?? 0) >= (cluster.spec?.instances ?? 1);
    return { ready, detail: `CloudNativePG: ${status.phase ?? 'no status yet'}` };
  }

  private async redisState(name: string, namespace: string) {
    const set = await this.options.cluster.read<V1StatefulSet>(ref('apps/v1', 'StatefulSet', name, namespace));
    if (!set) return { ready: false, detail: 'waiting for the StatefulSet to be created' };
    const ready = (set.status?.readyReplicas ?? 0) >= 1;
    return { ready, detail: `StatefulSet: ${set.status?.readyReplicas ?? 0} of 1 ready` };
  }

  private async setStatus(id: string, status: 'running' | 'failed' | 'creating', detail: string | null) {
    await this.options.db.transaction().execute(async (trx) => {
      const before = await trx
        .selectFrom('addons')
        .select(['status', 'restored_from', 'organization_id', 'name', 'kind'])
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst();
      await trx
        .updateTable('addons')
        .set({ status, status_detail: detail, updated_at: new Date() })
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .execute();
      // A fork (restored from another add-on) whose recovered Cluster just became ready: restored, as on the local runtime.
      if (status === 'running' && before?.status === 'creating' && before.restored_from)
        await publishWebhookEvent(trx, {
          organizationId: before.organization_id,
          event: 'addon.restored',
          data: { addon_id: id, name: before.name, kind: before.kind, restored_from: before.restored_from },
        });
    });
  }
}

/** The Kubernetes API's errors as one line (client-node's own carry headers and bodies): what the add-on's record shows. */
async function oneLine(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    throw new Error(describeError(err));
  }
}
