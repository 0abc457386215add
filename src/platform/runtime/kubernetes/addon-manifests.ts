/**
 * What an add-on becomes on Kubernetes (issue 31): a Postgres add-on a CloudNativePG `Cluster`
 * (with a `ScheduledBackup` when an object store takes its backups), a Redis add-on a
 * StatefulSet with a PersistentVolumeClaim; each with a Secret holding its password, a Service
 * on the add-on's port (the URL the attached applications get names it), and a NetworkPolicy
 * that admits the attached applications' pods only.
 */
import { EGRESS_DENIED_CIDRS } from './manifests.js';
import type { KubernetesObject, V1NetworkPolicy, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import type { AddonCredentials } from '../../addons/credentials.js';
import type { AddonPlan } from '../../addons/plans.js';
import type { AddonKind } from '../../db/schema.js';
import { LABEL, MANAGER, dns1035Label, sanitize, shortHash } from './names.js';

export const CNPG_API_VERSION = 'postgresql.cnpg.io/v1';
/** The image of a Redis add-on (the official one; its `redis` user is uid 999). */
export const REDIS_IMAGE = 'redis:7';
const REDIS_USER_ID = 999;
/** CloudNativePG's instance manager answers the operator here (status, backups). */
const CNPG_STATUS_PORT = 8000;
const SERVER_PORT: Record<AddonKind, number> = { postgres: 5432, redis: 6379 };

/** Where a Postgres add-on's base backups and WAL go (barman-cloud, S3-compatible). */
export interface AddonObjectStore {
  /** `s3://bucket/prefix`: each add-on's backups go to `<this><add-on id>`. */
  destinationPath: string;
  /** A non-AWS endpoint (MinIO, Ceph, Garage); unset: AWS. */
  endpointUrl?: string;
  /** The Secret in each organization's namespace holding the access key (and the region, when `regionKey` is set). */
  credentialsSecret: { name: string; accessKeyIdKey: string; secretAccessKeyKey: string; regionKey?: string };
  /** Given: the platform writes that Secret beside the add-on (from BACKUP_S3_*); absent: someone else does. */
  credentials?: { accessKeyId: string; secretAccessKey: string; region: string };
  retentionDays: number;
}

/** `s3://…/<prefix><add-on id>`: one add-on's backups (barman-cloud's server directory is below it). */
export const addonBackupPath = (store: AddonObjectStore, addonId: string) => `${store.destinationPath}${addonId}`;

/** barmanObjectStore as the add-on's Cluster (its backups) or a recovery's external cluster (its source) reads it. */
export function barmanObjectStore(store: AddonObjectStore, addonId: string, serverName?: string) {
  const s = store.credentialsSecret;
  return {
    destinationPath: addonBackupPath(store, addonId),
    ...(serverName ? { serverName } : {}),
    ...(store.endpointUrl ? { endpointURL: store.endpointUrl } : {}),
    s3Credentials: {
      accessKeyId: { name: s.name, key: s.accessKeyIdKey },
      secretAccessKey: { name: s.name, key: s.secretAccessKeyKey },
      ...(s.regionKey ? { region: { name: s.name, key: s.regionKey } } : {}),
    },
    wal: { compression: 'gzip' },
    data: { compression: 'gzip' },
  };
}

/** The object store's access key in the add-on's namespace (only when the platform holds it: BACKUP_S3_*). */
export function objectStoreSecret(store: AddonObjectStore, namespace: string): V1Secret | null {
  const c = store.credentials;
  if (!c) return null;
  const s = store.credentialsSecret;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: s.name, namespace, labels: { [LABEL.managedBy]: MANAGER, [LABEL.component]: 'addon-backup-credentials' } },
    type: 'Opaque',
    stringData: {
      [s.accessKeyIdKey]: c.accessKeyId,
      [s.secretAccessKeyKey]: c.secretAccessKey,
      ...(s.regionKey ? { [s.regionKey]: c.region } : {}),
    },
  };
}

export interface AddonTarget {
  id: string;
  name: string;
  kind: AddonKind;
  plan: AddonPlan;
  /** The Service's port: the add-on's port, as locally. */
  port: number;
  namespace: string;
  credentials: AddonCredentials;
  /** The application environments attached to it: the only pods its NetworkPolicy admits. */
  attached: Array<{ applicationId: string; environmentId: string }>;
  /** Deleted, within its grace period: kept, but not running (CNPG hibernation, 0 replicas). */
  stopped: boolean;
}

export interface AddonObjectNames {
  /** The Cluster, StatefulSet, Service and NetworkPolicy. */
  base: string;
  secret: string;
  namespace: string;
  /** `<service>.<namespace>.svc.cluster.local`: the URL's host. */
  host: string;
}

export function addonObjectNames(target: Pick<AddonTarget, 'id' | 'name' | 'namespace'>): AddonObjectNames {
  // Short enough for what CloudNativePG derives from it (`<name>-rw`, `<name>-1`, its PVCs).
  const base = dns1035Label('addon', sanitize(target.name).slice(0, 24), shortHash(target.id, 6));
  return {
    base,
    secret: `${base}-credentials`,
    namespace: target.namespace,
    host: `${base}.${target.namespace}.svc.cluster.local`,
  };
}

export function addonLabels(id: string, component: string): Record<string, string> {
  return { [LABEL.managedBy]: MANAGER, [LABEL.addonId]: id, [LABEL.component]: component };
}

/** Every object of the add-on, in the order they are applied (the Secret before what reads it). */
export function addonManifests(target: AddonTarget, objectStore: AddonObjectStore | null, backupIntervalHours: number): KubernetesObject[] {
  const names = addonObjectNames(target);
  const out: KubernetesObject[] = [credentialsSecret(target, names)];
  const storeSecret = target.kind === 'postgres' && objectStore ? objectStoreSecret(objectStore, names.namespace) : null;
  if (storeSecret) out.push(storeSecret);
  if (target.kind === 'postgres') {
    out.push(cnpgCluster(target, names, objectStore));
    if (objectStore && backupIntervalHours > 0) out.push(scheduledBackup(target, names, backupIntervalHours));
  } else out.push(redisStatefulSet(target, names));
  out.push(addonService(target, names), addonNetworkPolicy(target, names));
  return out;
}

/** The attached applications' password (CloudNativePG reads `kubernetes.io/basic-auth` Secrets). */
export function credentialsSecret(target: AddonTarget, names: AddonObjectNames): V1Secret {
  const c = target.credentials;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: names.secret, namespace: names.namespace, labels: addonLabels(target.id, 'addon-credentials') },
    type: target.kind === 'postgres' ? 'kubernetes.io/basic-auth' : 'Opaque',
    stringData: target.kind === 'postgres' ? { username: c.user, password: c.password } : { password: c.password },
  };
}

export function cnpgCluster(target: AddonTarget, names: AddonObjectNames, objectStore: AddonObjectStore | null): KubernetesObject {
  const { plan, credentials: c } = target;
  const resources = {
    requests: { cpu: `${plan.cpuMillicores}m`, memory: `${plan.memoryMiB}Mi` },
    limits: { cpu: `${plan.cpuMillicores}m`, memory: `${plan.memoryMiB}Mi` },
  };
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Cluster',
    metadata: {
      name: names.base,
      namespace: names.namespace,
      labels: addonLabels(target.id, 'addon'),
      // Deleted within its grace period: the pods go, the volumes stay (CloudNativePG's hibernation).
      ...(target.stopped ? { annotations: { 'cnpg.io/hibernation': 'on' } } : {}),
    },
    spec: {
      instances: 1,
      // On every object the operator makes, the pods included: the NetworkPolicy selects them by it.
      inheritedMetadata: { labels: { [LABEL.managedBy]: MANAGER, [LABEL.addonId]: target.id } },
      storage: { size: `${plan.storageGiB}Gi` },
      resources,
      postgresql: {
        parameters: {
          max_connections: String(plan.connections),
          ...(plan.sharedBuffersMiB ? { shared_buffers: `${plan.sharedBuffersMiB}MB` } : {}),
        },
      },
      bootstrap: { initdb: { database: c.database!, owner: c.user, secret: { name: names.secret } } },
      // Declared too, so a rotation (a new password in the Secret) reaches the server.
      managed: { roles: [{ name: c.user, ensure: 'present', login: true, passwordSecret: { name: names.secret } }] },
      ...(objectStore
        ? {
            backup: {
              retentionPolicy: `${objectStore.retentionDays}d`,
              barmanObjectStore: barmanObjectStore(objectStore, target.id),
            },
          }
        : {}),
    },
  } as KubernetesObject;
}

/** CloudNativePG's cron has seconds: every `hours` hours (a day or more: at midnight every `hours / 24` days). */
export function backupSchedule(hours: number): string {
  if (hours < 24) return `0 0 */${hours} * * *`;
  const days = Math.max(1, Math.round(hours / 24));
  return days === 1 ? '0 0 0 * * *' : `0 0 0 */${days} * *`;
}

export function scheduledBackup(target: AddonTarget, names: AddonObjectNames, hours: number): KubernetesObject {
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'ScheduledBackup',
    metadata: { name: names.base, namespace: names.namespace, labels: addonLabels(target.id, 'addon-backup') },
    spec: {
      schedule: backupSchedule(hours),
      cluster: { name: names.base },
      method: 'barmanObjectStore',
      backupOwnerReference: 'self',
      immediate: true,
      suspend: target.stopped,
    },
  } as KubernetesObject;
}

export function redisStatefulSet(target: AddonTarget, names: AddonObjectNames): V1StatefulSet {
  const { plan } = target;
  const labels = { [LABEL.managedBy]: MANAGER, [LABEL.addonId]: target.id };
  const args = ['--requirepass', '$(REDIS_PASSWORD)', '--appendonly', 'yes', '--dir', '/data', '--port', String(SERVER_PORT.redis)];
  args.push('--maxclients', String(plan.connections), '--maxmemory-policy', 'noeviction');
  if (plan.maxmemoryMiB) args.push('--maxmemory', `${plan.maxmemoryMiB}mb`);
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: names.base, namespace: names.namespace, labels: addonLabels(target.id, 'addon') },
    spec: {
      serviceName: names.base,
      replicas: target.stopped ? 0 : 1,
      selector: { matchLabels: labels },
      template: {
        metadata: {
          labels,
          // A new password (rotation) restarts the server with it: the argument is read at start.
          annotations: { 'slipway.dev/credentials': shortHash(target.credentials.password, 12) },
        },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: REDIS_USER_ID,
            runAsGroup: REDIS_USER_ID,
            fsGroup: REDIS_USER_ID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'redis',
              image: REDIS_IMAGE,
              command: ['redis-server'],
              args,
              env: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: names.secret, key: 'password' } } }],
              ports: [{ name: 'redis', containerPort: SERVER_PORT.redis, protocol: 'TCP' }],
              readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 5 },
              resources: {
                requests: { cpu: `${plan.cpuMillicores}m`, memory: `${plan.memoryMiB}Mi` },
                limits: { cpu: `${plan.cpuMillicores}m`, memory: `${plan.memoryMiB}Mi` },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                privileged: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${plan.storageGiB}Gi` } } },
        },
      ],
    },
  };
}

/** The add-on's address: its port, to the Postgres primary (CloudNativePG's role label) or the Redis pod. */
export function addonService(target: AddonTarget, names: AddonObjectNames): V1Service {
  const selector: Record<string, string> =
    target.kind === 'postgres'
      ? { 'cnpg.io/cluster': names.base, 'cnpg.io/instanceRole': 'primary' }
      : { [LABEL.managedBy]: MANAGER, [LABEL.addonId]: target.id };
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: names.base, namespace: names.namespace, labels: addonLabels(target.id, 'addon') },
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: target.kind, port: target.port, targetPort: SERVER_PORT[target.kind] as never, protocol: 'TCP' }],
    },
  };
}

/**
 * Who reaches the add-on's pods: the pods of the attached application environments, on the
 * server's port (the local rule "reachable only from attached apps"); for Postgres also
 * CloudNativePG's operator (its instance manager's port) and the cluster's own instances. No
 * attachment: no application rule at all (a rule without peers would admit everyone).
 */
export function addonNetworkPolicy(target: AddonTarget, names: AddonObjectNames, operatorNamespace = 'cnpg-system'): V1NetworkPolicy {
  const server = SERVER_PORT[target.kind];
  const ingress: NonNullable<V1NetworkPolicy['spec']>['ingress'] = [];
  if (target.attached.length > 0)
    ingress.push({
      // client-node's model spells `from` as `_from` (it serializes it back to `from`).
      _from: target.attached.map((a) => ({
        podSelector: { matchLabels: { [LABEL.applicationId]: a.applicationId, [LABEL.environmentId]: a.environmentId } },
      })),
      ports: [{ protocol: 'TCP', port: server as never }],
    });
  if (target.kind === 'postgres') {
    ingress.push({
      _from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': operatorNamespace } } }],
      ports: [{ protocol: 'TCP', port: CNPG_STATUS_PORT as never }],
    });
    ingress.push({
      _from: [{ podSelector: { matchLabels: { 'cnpg.io/cluster': names.base } } }],
      ports: [
        { protocol: 'TCP', port: server as never },
        { protocol: 'TCP', port: CNPG_STATUS_PORT as never },
      ],
    });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: names.base, namespace: names.namespace, labels: addonLabels(target.id, 'addon') },
    spec: {
      podSelector: { matchLabels: { [LABEL.addonId]: target.id } },
      policyTypes: ['Ingress', 'Egress'],
      ingress,
      egress: addonEgress(target.kind, names, operatorNamespace),
    },
  };
}

/**
 * Where an add-on's pods may connect: the cluster's DNS, and nothing else for Redis (a tenant could aim
 * `MIGRATE` or `REPLICAOF` anywhere). Postgres also reaches its own instances (replication), the operator,
 * the API server (CloudNativePG's instance manager reports to it; its address is the cluster's, unknown
 * here, so it is admitted by port) and public addresses for the object store, never private or link-local
 * ones: the platform's namespace, the nodes and the metadata service stay unreachable.
 */
function addonEgress(
  kind: AddonTarget['kind'],
  names: AddonObjectNames,
  operatorNamespace: string,
): NonNullable<V1NetworkPolicy['spec']>['egress'] {
  const dns = {
    to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
    ports: [
      { protocol: 'UDP', port: 53 as never },
      { protocol: 'TCP', port: 53 as never },
    ],
  };
  if (kind !== 'postgres') return [dns];
  return [
    dns,
    { to: [{ podSelector: { matchLabels: { 'cnpg.io/cluster': names.base } } }] },
    { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': operatorNamespace } } }] },
    {
      ports: [
        { protocol: 'TCP', port: 443 as never },
        { protocol: 'TCP', port: 6443 as never },
      ],
    },
    {
      to: [
        { ipBlock: { cidr: '0.0.0.0/0', except: EGRESS_DENIED_CIDRS.ipv4 } },
        { ipBlock: { cidr: '::/0', except: EGRESS_DENIED_CIDRS.ipv6 } },
      ],
    },
  ];
}
