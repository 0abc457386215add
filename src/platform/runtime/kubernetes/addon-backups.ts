/**
 * Backups, restores and drills of Postgres add-ons on Kubernetes (issue 31), done by CloudNativePG
 * itself: base backups and WAL go to the object store of BACKUP_S3_* (`spec.backup.barmanObjectStore`
 * of the add-on's Cluster); a backup is a `Backup` resource whose status the platform reads; a restore
 * is a new Cluster bootstrapped by `recovery` from an `externalClusters` entry reading the source's
 * store; a drill is such a Cluster made and deleted again. SQL reaches the pods only through `exec`.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { AddonObjectStore, AddonObjectNames, AddonTarget } from './addon-manifests.js';
import { CNPG_API_VERSION, addonLabels, barmanObjectStore, cnpgCluster } from './addon-manifests.js';
// cluster.ts as a type only: this file stays free of the Kubernetes client (the add-ons module imports it at start).
import type { KubernetesCluster } from './cluster.js';
import { execInPod } from './pod-exec.js';

/** The object store of BACKUP_S3_* (all of endpoint, bucket and both keys), or null. */
export function objectStoreFromSettings(s: {
  BACKUP_S3_ENDPOINT?: string | undefined;
  BACKUP_S3_BUCKET?: string | undefined;
  BACKUP_S3_REGION: string;
  BACKUP_S3_PREFIX: string;
  BACKUP_S3_ACCESS_KEY_ID?: string | undefined;
  BACKUP_S3_SECRET_ACCESS_KEY?: string | undefined;
  ADDONS_BACKUP_RETENTION_DAYS: number;
}): AddonObjectStore | null {
  if (!s.BACKUP_S3_ENDPOINT || !s.BACKUP_S3_BUCKET || !s.BACKUP_S3_ACCESS_KEY_ID || !s.BACKUP_S3_SECRET_ACCESS_KEY) return null;
  return {
    destinationPath: `s3://${s.BACKUP_S3_BUCKET}/${s.BACKUP_S3_PREFIX}`,
    endpointUrl: s.BACKUP_S3_ENDPOINT,
    credentialsSecret: {
      name: 'slipway-addon-backups',
      accessKeyIdKey: 'ACCESS_KEY_ID',
      secretAccessKeyKey: 'SECRET_ACCESS_KEY',
      regionKey: 'REGION',
    },
    credentials: { accessKeyId: s.BACKUP_S3_ACCESS_KEY_ID, secretAccessKey: s.BACKUP_S3_SECRET_ACCESS_KEY, region: s.BACKUP_S3_REGION },
    retentionDays: s.ADDONS_BACKUP_RETENTION_DAYS,
  };
}

/** CloudNativePG's labels on the Backups of a cluster (the operator sets them on scheduled ones; we on ours). */
const CLUSTER_LABEL = 'cnpg.io/cluster';
const SCHEDULED_LABEL = 'cnpg.io/scheduled-backup';

/** A `Backup` of the add-on's Cluster to its object store (what `POST …/backups` makes). */
export function backupManifest(target: Pick<AddonTarget, 'id'>, names: AddonObjectNames, name: string): KubernetesObject {
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Backup',
    metadata: { name, namespace: names.namespace, labels: { ...addonLabels(target.id, 'addon-backup'), [CLUSTER_LABEL]: names.base } },
    spec: { cluster: { name: names.base }, method: 'barmanObjectStore' },
  } as KubernetesObject;
}

/** Where a recovery stops: a time, a restore point's name, or the end of one base backup (CloudNativePG's backup id). */
export type ClusterRecoveryTarget = { targetTime: string } | { targetName: string } | { backupID: string; targetImmediate: true };

/**
 * A Cluster recovered from the source add-on's object store: `bootstrap.recovery` from the
 * `externalClusters` entry `origin` (the source's store, under its Cluster's name as barman's
 * server name). A fork keeps backups of its own (to its own path); a drill's scratch Cluster
 * (`backups: false`) writes nothing to the store.
 */
export function recoveryCluster(
  target: AddonTarget,
  names: AddonObjectNames,
  source: { id: string; base: string },
  store: AddonObjectStore,
  recoveryTarget: ClusterRecoveryTarget,
  backups: boolean,
): KubernetesObject {
  const cluster = cnpgCluster(target, names, backups ? store : null) as KubernetesObject & { spec: Record<string, unknown> };
  cluster.spec.bootstrap = {
    recovery: {
      source: 'origin',
      database: target.credentials.database!,
      owner: target.credentials.user,
      secret: { name: names.secret },
      recoveryTarget,
    },
  };
  cluster.spec.externalClusters = [{ name: 'origin', barmanObjectStore: barmanObjectStore(store, source.id, source.base) }];
  return cluster;
}

/** What is read of a Backup's status (CloudNativePG writes it). */
export interface ClusterBackup {
  uid: string;
  name: string;
  scheduled: boolean;
  /** `completed`, `failed`, or the operator's phase meanwhile (`running`, `started`, …); null: not picked up yet. */
  phase: string | null;
  error: string | null;
  /** barman's id of the base backup (a recovery's `backupID`). */
  backupId: string | null;
  beginWal: string | null;
  startedAt: string | null;
  stoppedAt: string | null;
  created: string | null;
}

type BackupObject = KubernetesObject & {
  status?: {
    phase?: string;
    error?: string;
    backupId?: string;
    beginWal?: string;
    startedAt?: string;
    stoppedAt?: string;
  };
};

/** The Backups of one add-on's Cluster, oldest first. */
export async function clusterBackups(cluster: KubernetesCluster, names: AddonObjectNames): Promise<ClusterBackup[]> {
  const items = await cluster.list<BackupObject>(CNPG_API_VERSION, 'Backup', names.namespace, `${CLUSTER_LABEL}=${names.base}`);
  return items
    .map((b) => ({
      uid: b.metadata!.uid!,
      name: b.metadata!.name!,
      scheduled: Boolean(b.metadata?.labels?.[SCHEDULED_LABEL]),
      phase: b.status?.phase ?? null,
      error: b.status?.error ?? null,
      backupId: b.status?.backupId ?? null,
      beginWal: b.status?.beginWal ?? null,
      startedAt: b.status?.startedAt ?? null,
      stoppedAt: b.status?.stoppedAt ?? null,
      created: b.metadata?.creationTimestamp ? new Date(b.metadata.creationTimestamp).toISOString() : null,
    }))
    .sort((a, b) => (a.created ?? '').localeCompare(b.created ?? ''));
}

/** A cluster's state as a restore or drill waits on it: ready, or still coming up (the operator's phase). */
export async function clusterReadiness(cluster: KubernetesCluster, name: string, namespace: string) {
  type CnpgCluster = KubernetesObject & {
    spec?: { instances?: number };
    status?: { phase?: string; readyInstances?: number; conditions?: Array<{ type?: string; status?: string; message?: string }> };
  };
  const found = await cluster.read<CnpgCluster>({ apiVersion: CNPG_API_VERSION, kind: 'Cluster', name, namespace });
  if (!found) return { ready: false, detail: 'waiting for the Cluster to be created' };
  const status = found.status ?? {};
  const condition = (status.conditions ?? []).find((c) => c.type === 'Ready');
  const ready = condition?.status === 'True' && (status.readyInstances ?? 0) >= (found.spec?.instances ?? 1);
  return { ready, detail: `CloudNativePG: ${status.phase ?? 'no status yet'}` };
}

/** Most output kept of a command run in a pod (a drill prints a line per table). */
const EXEC_OUTPUT_LIMIT = 1024 * 1024;

/**
 * Runs a shell script in a pod's `postgres` container (CloudNativePG's instance pod `<cluster>-1`),
 * `input` on its standard input (secrets go there, never on the command line the API server logs).
 */
export async function runInPod(
  kubeConfig: KubeConfig,
  target: { namespace: string; pod: string },
  script: string,
  input: string,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const process = await execInPod(kubeConfig, { ...target, container: 'postgres' }, { command: script }).catch((err: unknown) => {
    // execInPod speaks WebSocket itself: its errors are plain (never the client's ApiException).
    throw new Error(`exec in pod ${target.pod}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  });
  const collect = (stream: NodeJS.ReadableStream) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => {
      if (text.length < EXEC_OUTPUT_LIMIT) text += chunk.toString('utf8').slice(0, EXEC_OUTPUT_LIMIT - text.length);
    });
    return () => text;
  };
  const stdout = collect(process.stdout);
  const stderr = collect(process.stderr);
  process.stdin.end(input);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<null>((resolve) => {
    timer = setTimeout(() => (process.kill(), resolve(null)), timeoutMs);
  });
  const exited = await Promise.race([process.exited, timedOut]).finally(() => clearTimeout(timer));
  if (!exited) return { code: null, stdout: stdout(), stderr: `timed out after ${timeoutMs / 1000} s` };
  return { code: exited.exitCode, stdout: stdout(), stderr: stderr() };
}
