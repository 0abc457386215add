import type { Selectable } from 'kysely';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { AddonBackupsTable, AddonDrillResult, AddonsTable } from '../../platform/db/schema.js';
import { conflict } from '../../platform/errors.js';
import { publishWebhookEvent, type WebhookEvent } from '../../platform/webhook-events.js';
import {
  drillCheckResult,
  drillTables,
  newPassword,
  openCredentials,
  sealCredentials,
  type RecoveryTarget,
} from '../../platform/addons/index.js';
import type { KubernetesAddons } from '../../platform/runtime/kubernetes/kubernetes-addons.js';
import type { KubernetesRuntime } from '../../platform/runtime/kubernetes/kubernetes-runtime.js';
import { CNPG_API_VERSION, addonObjectNames, type AddonObjectStore } from '../../platform/runtime/kubernetes/addon-manifests.js';
import {
  backupManifest,
  clusterBackups,
  clusterReadiness,
  recoveryCluster,
  runInPod,
  type ClusterBackup,
  type ClusterRecoveryTarget,
} from '../../platform/runtime/kubernetes/addon-backups.js';
import { archiveNowScript, drillScript } from '../../platform/runtime/kubernetes/addon-sql.js';
import type { AddonsRepository } from './addons.repository.js';

type AddonRow = Selectable<AddonsTable>;
type BackupRow = Selectable<AddonBackupsTable>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BACKUP_TIMEOUT_MS = 3600_000;
const DRILL_TIMEOUT_MS = 3600_000;
const CHECK_TIMEOUT_MS = 120_000;
/** How long a restore to a time waits for the source's archiver (barman-cloud uploads each segment to the store). */
const ARCHIVED_WAIT_MS = 120_000;

export interface KubernetesBackupsOptions {
  db: Db;
  repo: AddonsRepository;
  secrets: SecretBox;
  backend: KubernetesAddons;
  runtime: KubernetesRuntime;
  /** BACKUP_S3_*; null: backups on Kubernetes answer 409. */
  store: AddonObjectStore | null;
  /** Between two status reads of a Backup or a Cluster being waited for. Default 2 s. */
  pollIntervalMs?: number;
}

/**
 * Backups, restores and drills of Postgres add-ons on RUNTIME=kubernetes (issue 31), done by
 * CloudNativePG to the object store of BACKUP_S3_*. Each `Backup` resource is one row of
 * `addon_backups`, whose id is the resource's uid (a scheduled one, made by the operator from the
 * ScheduledBackup, gets its row when the platform next reads the cluster's Backups); the row
 * follows the resource's phase.
 */
export class KubernetesBackups {
  private readonly following = new Set<string>();

  constructor(private readonly o: KubernetesBackupsOptions) {}

  /** The object store, or a 409 saying which settings give one. */
  requireStore(): AddonObjectStore {
    if (!this.o.store)
      throw conflict(
        'Add-on backups on Kubernetes need an object store: set BACKUP_S3_ENDPOINT, BACKUP_S3_BUCKET, BACKUP_S3_ACCESS_KEY_ID and ' +
          'BACKUP_S3_SECRET_ACCESS_KEY (CloudNativePG keeps base backups and WAL there)',
      );
    return this.o.store;
  }

  /** Brings the add-on's rows up to its Cluster's Backups: new ones recorded, finished ones settled (a failure sent once). */
  async sync(addon: AddonRow): Promise<void> {
    if (!this.o.store) return;
    const names = addonObjectNames(await this.o.backend.target(addon.id));
    const found = await clusterBackups(this.o.runtime.cluster, names);
    const rows = new Map((await this.rowsOf(addon.id)).map((r) => [r.id, r]));
    for (const b of found) {
      if (!UUID.test(b.uid)) continue;
      const row = rows.get(b.uid.toLowerCase());
      const settled = this.settled(b);
      if (!row) {
        await this.o.db
          .insertInto('addon_backups')
          .values({
            id: b.uid,
            addon_id: addon.id,
            trigger: b.scheduled ? 'scheduled' : 'manual',
            started_at: new Date(b.startedAt ?? b.created ?? Date.now()),
            ...settled,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      } else if (row.status === 'running' && settled.status !== 'running') {
        await this.o.db.transaction().execute(async (trx) => {
          const updated = await trx
            .updateTable('addon_backups')
            .set(settled)
            .where('id', '=', row.id)
            .where('status', '=', 'running')
            .returningAll()
            .executeTakeFirst();
          if (updated?.status === 'failed') await publish(trx, addon, 'addon.backup_failed', { backup_id: row.id, detail: updated.detail });
        });
      }
    }
  }

  /** `POST …/backups`: a Backup resource, answered at once (running); its row follows the resource's phase. */
  async backup(addon: AddonRow): Promise<BackupRow> {
    this.requireStore();
    const names = addonObjectNames(await this.o.backend.target(addon.id));
    const name = `${names.base}-${Date.now().toString(36)}`;
    const made = await this.o.runtime.cluster.apply(backupManifest(addon, names, name));
    const row = await this.o.db
      .insertInto('addon_backups')
      .values({ id: made.metadata!.uid!, addon_id: addon.id, trigger: 'manual' })
      .returningAll()
      .executeTakeFirstOrThrow();
    this.follow(addon, row.id);
    return row;
  }

  /**
   * A restore into the fork: its Cluster recovered from the source's object store (to the time,
   * the restore point, or the end of the chosen base backup); its status follows the Cluster's
   * conditions. The fork gets passwords of its own (the Secret the recovery reads).
   */
  async restore(source: AddonRow, fork: AddonRow, backup: BackupRow, target: RecoveryTarget): Promise<void> {
    const store = this.requireStore();
    const sourceNames = addonObjectNames(await this.o.backend.target(source.id));
    const recovery: ClusterRecoveryTarget =
      'immediate' in target
        ? { backupID: await this.backupIdOf(source, backup), targetImmediate: true }
        : 'name' in target
          ? { targetName: target.name }
          : { targetTime: target.time.toISOString() };
    const inherited = openCredentials(this.o.secrets, fork.credentials_sealed);
    if (!('immediate' in target)) {
      await this.o.repo.update(fork.id, { status_detail: 'restoring: archiving the source’s latest WAL' });
      await this.archiveNow(sourceNames);
    }
    await this.o.repo.update(fork.id, {
      credentials_sealed: sealCredentials(this.o.secrets, { ...inherited, password: newPassword(), adminPassword: newPassword() }),
      status_detail: 'restoring: recovering from the object store',
    });
    await this.o.backend.provision(fork, (t, names) =>
      recoveryCluster(t, names, { id: source.id, base: sourceNames.base }, store, recovery, true),
    );
  }

  /**
   * A drill: a scratch Cluster recovered from the latest backup (writing nothing to the store), once
   * ready its rows counted per table and the add-on's check query run as the application's role,
   * read-only, through `exec`; then the scratch Cluster is deleted.
   */
  async drill(addon: AddonRow, backup: BackupRow): Promise<Omit<AddonDrillResult, 'at' | 'duration_ms'>> {
    const store = this.requireStore();
    const target = await this.o.backend.target(addon.id);
    const names = addonObjectNames(target);
    const scratch = { ...names, base: `${names.base}-drill` };
    const c = openCredentials(this.o.secrets, addon.credentials_sealed);
    const check = addon.drill_check_query ? { query: addon.drill_check_query, user: c.user, database: c.database! } : null;
    const cluster = this.o.runtime.cluster;
    const ref = { apiVersion: CNPG_API_VERSION, kind: 'Cluster', name: scratch.base, namespace: names.namespace };
    const fail = (detail: string) => ({
      ok: false,
      backup_id: backup.id,
      detail,
      tables: {},
      check: check ? nullCheck(check.query) : null,
    });
    try {
      const recovery = { backupID: await this.backupIdOf(addon, backup), targetImmediate: true as const };
      await cluster.apply(
        recoveryCluster({ ...target, attached: [], stopped: false }, scratch, { id: addon.id, base: names.base }, store, recovery, false),
      );
      const deadline = Date.now() + DRILL_TIMEOUT_MS;
      let state = await clusterReadiness(cluster, scratch.base, names.namespace);
      while (!state.ready) {
        if (Date.now() > deadline) return fail(`the restored copy was not ready within ${DRILL_TIMEOUT_MS / 1000} s: ${state.detail}`);
        await new Promise((r) => setTimeout(r, this.o.pollIntervalMs ?? 2000));
        state = await clusterReadiness(cluster, scratch.base, names.namespace);
      }
      const pod = { namespace: names.namespace, pod: `${scratch.base}-1` };
      const run = await runInPod(
        this.o.runtime.kubeConfig,
        pod,
        drillScript(c.database!, check),
        check ? `${c.password}\n` : '',
        CHECK_TIMEOUT_MS,
      );
      if (run.code !== 0) {
        const failed = /^check_failed=(.*)$/m.exec(run.stdout)?.[1];
        return fail(
          failed !== undefined
            ? `the check query failed on the restored copy: ${failed || `exit code ${run.code}`}`
            : `counting rows on the restored copy failed: ${lastLine(run.stderr) ?? `exit code ${run.code}`}`,
        );
      }
      return {
        ok: true,
        backup_id: backup.id,
        detail: null,
        tables: drillTables(run.stdout),
        check: check ? { ...nullCheck(check.query), ...drillCheckResult(run.stdout) } : null,
      };
    } catch (err) {
      return fail(`the restored copy did not start: ${(err as Error).message}`);
    } finally {
      await cluster.delete(ref).catch(() => {});
    }
  }

  /**
   * Retention of the records: the rows (and their Backup resources, which would bring them back at
   * the next read) of backups finished before ADDONS_BACKUP_RETENTION_DAYS, the newest completed one
   * always kept, as for local backups. The store's own objects are CloudNativePG's to remove
   * (`retentionPolicy`); deleting a Backup resource leaves them. A resource that cannot be deleted
   * keeps its row: the next prune tries again.
   */
  async prune(addon: AddonRow): Promise<void> {
    if (!this.o.store) return;
    const cutoff = new Date(Date.now() - this.o.store.retentionDays * 86_400_000);
    const rows = await this.rowsOf(addon.id);
    const newest = rows.filter((b) => b.status === 'completed').pop();
    const expired = rows.filter((b) => b.status !== 'running' && b.id !== newest?.id && (b.finished_at ?? b.started_at) < cutoff);
    if (!expired.length) return;
    const names = addonObjectNames(await this.o.backend.target(addon.id));
    const resources = new Map((await clusterBackups(this.o.runtime.cluster, names)).map((b) => [b.uid.toLowerCase(), b.name]));
    const removed: string[] = [];
    for (const row of expired) {
      const name = resources.get(row.id.toLowerCase());
      const gone = name
        ? await this.o.runtime.cluster
            .delete({ apiVersion: CNPG_API_VERSION, kind: 'Backup', name, namespace: names.namespace })
            .then(() => true)
            .catch(() => false)
        : true;
      if (gone) removed.push(row.id);
    }
    if (removed.length) await this.o.db.deleteFrom('addon_backups').where('id', 'in', removed).execute();
  }

  /** Forces a WAL switch on the source's primary and waits until it is archived (see archiveNowScript). */
  private async archiveNow(names: ReturnType<typeof addonObjectNames>) {
    const run = await runInPod(
      this.o.runtime.kubeConfig,
      { namespace: names.namespace, pod: `${names.base}-1` },
      archiveNowScript(ARCHIVED_WAIT_MS / 1000),
      '',
      ARCHIVED_WAIT_MS + 30_000,
    );
    if (run.code === 0 && /^archived=/m.test(run.stdout)) return;
    const failed = /^not_archived=(.*)$/m.exec(run.stdout)?.[1];
    throw new Error(
      failed !== undefined
        ? `the source did not archive its latest WAL within ${ARCHIVED_WAIT_MS / 1000} s (last failed segment: ${failed}): ` +
            'CloudNativePG cannot reach the object store, see the Cluster’s status'
        : `archiving the source’s latest WAL failed: ${lastLine(run.stderr) ?? `exit code ${run.code}`}`,
    );
  }

  /** barman's id of the row's base backup (a recovery's `backupID`), read from its Backup resource. */
  private async backupIdOf(addon: AddonRow, backup: BackupRow): Promise<string> {
    const names = addonObjectNames(await this.o.backend.target(addon.id));
    const found = (await clusterBackups(this.o.runtime.cluster, names)).find((b) => b.uid.toLowerCase() === backup.id.toLowerCase());
    if (!found?.backupId) throw conflict(`Backup ${backup.id} of '${addon.name}' is no longer in the cluster: choose another`);
    return found.backupId;
  }

  /** Reads the Backup until it is settled (or the time is up), in the background. */
  private follow(addon: AddonRow, rowId: string) {
    if (this.following.has(rowId)) return;
    this.following.add(rowId);
    const deadline = Date.now() + BACKUP_TIMEOUT_MS;
    const step = async (): Promise<void> => {
      await this.sync(addon);
      const row = await this.o.db.selectFrom('addon_backups').select('status').where('id', '=', rowId).executeTakeFirst();
      if (!row || row.status !== 'running' || Date.now() > deadline) return;
      await new Promise((r) => setTimeout(r, this.o.pollIntervalMs ?? 2000));
      return step();
    };
    void step()
      .catch(() => {}) // the sweep reads the cluster again
      .finally(() => this.following.delete(rowId));
  }

  /** The row a Backup's phase makes: settled on completed/failed, the operator's error without the store's keys. */
  private settled(b: ClusterBackup) {
    if (b.phase === 'completed')
      return { status: 'completed' as const, start_wal: b.beginWal, detail: null, finished_at: new Date(b.stoppedAt ?? Date.now()) };
    if (b.phase === 'failed')
      return {
        status: 'failed' as const,
        detail: `CloudNativePG: ${this.scrub(b.error ?? 'the backup failed')}`,
        finished_at: new Date(b.stoppedAt ?? Date.now()),
      };
    return { status: 'running' as const };
  }

  private scrub(text: string): string {
    let out = text;
    const keys = this.o.store?.credentials;
    for (const secret of keys ? [keys.secretAccessKey, keys.accessKeyId] : []) out = out.split(secret).join('[hidden]');
    return out.split('\n')[0]!.slice(0, 300);
  }

  private rowsOf(addonId: string) {
    return this.o.db.selectFrom('addon_backups').selectAll().where('addon_id', '=', addonId).orderBy('started_at').orderBy('id').execute();
  }
}

function publish(db: Db, addon: AddonRow, event: WebhookEvent, data: Record<string, unknown>) {
  return publishWebhookEvent(db, {
    organizationId: addon.organization_id,
    event,
    data: { addon_id: addon.id, name: addon.name, kind: addon.kind, ...data },
  });
}

const nullCheck = (query: string) => ({ query, rows: null, first_value: null });

function lastLine(text: string): string | null {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop()
      ?.slice(0, 300) ?? null
  );
}
