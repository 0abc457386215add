import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import type { Selectable } from 'kysely';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import type { AddonBackupsTable, AddonDrillResult, AddonsTable } from '../../platform/db/schema.js';
import { AppError, conflict, invalid } from '../../platform/errors.js';
import { removeBeneath } from '../../platform/fs/beneath.js';
import { iso } from '../../platform/http/schemas.js';
import { publishWebhookEvent, type WebhookEvent } from '../../platform/webhook-events.js';
import {
  adminClient,
  baseBackupCommand,
  drillCheckResult,
  drillCommand,
  drillTables,
  keyValues,
  newPassword,
  openCredentials,
  pruneCommand,
  quote,
  RECOVERY_SETTINGS,
  restoreCommand,
  sealCredentials,
  type AddonSupervisor,
  type RecoveryTarget,
} from '../../platform/addons/index.js';
import type { AddonsRepository } from './addons.repository.js';
import type { AddonsService } from './addons.service.js';
import { removePurgedAddonObjects, WalCapReached, type S3Backups } from './backups-s3.js';
import type { KubernetesBackups } from './kube-backups.js';
import type { DiskRoom } from './disk-room.js';

type AddonRow = Selectable<AddonsTable>;
type BackupRow = Selectable<AddonBackupsTable>;

export interface BackupSettings {
  /** Hours between scheduled base backups (0: on demand only). */
  intervalHours: number;
  retentionDays: number;
  /** Hours between scheduled restore drills (0: on demand only). */
  drillIntervalHours: number;
  /** DATA_DIR's disk, where the local runtime keeps backups and restored copies (null: the cluster keeps them). */
  room?: DiskRoom | null;
  /** Where what fails in the background (a restore's end the database could not record) is told. */
  log?: { warn(obj: object, msg: string): void };
}

/** What a restore asks for: exactly one of a time, a base backup, or a named restore point (a release's). */
export interface RestoreRequest {
  name: string;
  time?: string | undefined;
  backup_id?: string | undefined;
  restore_point?: string | undefined;
  release_id?: string | undefined;
}

const BACKUP_TIMEOUT_MS = 3600_000;
const RESTORE_TIMEOUT_MS = 3600_000;
const ARCHIVED_WAIT_MS = 30_000;
/** Where a drill of a backup in the store downloads it, inside the add-on's directory. */
const DRILL_DOWNLOAD = 'drill-backup';

/**
 * Backups of Postgres add-ons: base backups taken by pg_basebackup into the add-on's own
 * repository beside the WAL its server archives continuously; restores into a NEW add-on (a
 * fork) at a time, a backup or a named restore point; restore drills that prove the latest
 * backup restorable. Every file operation runs in the add-on's sandbox (AddonSupervisor.runTask).
 */
export class AddonBackupsService {
  /** Backups and restores this process started: a row in progress that is not here was interrupted. */
  private readonly active = new Set<string>();
  private readonly startedAt = new Date();

  constructor(
    private readonly db: Db,
    private readonly repo: AddonsRepository,
    private readonly secrets: SecretBox,
    private readonly addons: AddonsService,
    private readonly supervisor: AddonSupervisor | null,
    private readonly settings: BackupSettings,
    /** The S3-compatible store (BACKUP_S3_*): each backup and the archived WAL go there. */
    private readonly s3: S3Backups | null = null,
    /** RUNTIME=kubernetes: CloudNativePG's own backups (src/modules/addons/kube-backups.ts). */
    private readonly kube: KubernetesBackups | null = null,
  ) {}
  private orphansPrunedAt = 0;
  /** Restores under way, per source add-on: retention waits until they have read what they need. */
  private readonly restoresFrom = new Map<string, number>();

  async list(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.addons.resolveForRead(userId, orgSlug, name);
    this.requirePostgres(addon);
    await this.syncKube(addon);
    const backups = await this.backupsOf(addon.id);
    const completed = backups.filter((b) => b.status === 'completed');
    return {
      backups: backups.map(backupView),
      window: completed.length
        ? { earliest: iso(completed[0]!.finished_at!), latest: addon.status === 'running' && !addon.deleted_at ? iso(new Date()) : null }
        : null,
      retention_days: this.settings.retentionDays,
      last_drill: addon.last_drill,
      last_proven_restorable_at: addon.last_proven_restorable_at ? iso(addon.last_proven_restorable_at) : null,
    };
  }

  async create(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.addons.resolveForAdmin(userId, orgSlug, name);
    this.requireRunningPostgres(addon);
    if (this.kube) return backupView(await this.kube.backup(addon));
    return backupView(await this.backup(addon, 'manual'));
  }

  /** Starts a restore into a new add-on and answers at once with it (status `creating`, its progress in `status_detail`). */
  async restore(userId: string, orgSlug: string, name: string, body: RestoreRequest) {
    const { addon: source } = await this.addons.resolveForAdmin(userId, orgSlug, name);
    this.requirePostgres(source);
    const supervisor = this.kube ? null : this.requireSupervisor();
    this.kube?.requireStore();
    const given = [body.time, body.backup_id, body.restore_point, body.release_id].filter((v) => v !== undefined).length;
    if (given !== 1) throw invalid('to', 'give exactly one of time, backup_id, restore_point or release_id');
    if (body.release_id !== undefined) body = { name: body.name, restore_point: await this.releasePoint(source, body.release_id) };
    const { backup, target, label } = await this.plan(source, body);
    // The copy takes about the backup's size (the WAL replayed onto it, more).
    await this.settings.room?.require(`the add-on '${body.name}' was not restored`, Number(backup.size_bytes ?? 0));
    const fork = await this.addons.insertFork(source, body.name, `${source.name} at ${label}`);
    this.active.add(fork.id);
    this.restoresFrom.set(source.id, (this.restoresFrom.get(source.id) ?? 0) + 1);
    const restoring = supervisor
      ? this.runRestore(supervisor, source, fork, backup, target, label)
      : this.kube!.restore(source, fork, backup, target)
          .catch((err: Error) => this.repo.update(fork.id, { status: 'failed', status_detail: `restore failed: ${err.message}` }))
          // Nobody awaits it: a database that is away must not make it an unhandled rejection (the process would end).
          .catch((err: unknown) => this.settings.log?.warn({ addonId: fork.id, err }, 'recording the failed restore failed'));
    void restoring.finally(() => {
      this.active.delete(fork.id);
      const left = (this.restoresFrom.get(source.id) ?? 1) - 1;
      if (left > 0) this.restoresFrom.set(source.id, left);
      else this.restoresFrom.delete(source.id);
    });
    return this.addons.viewOf(fork.id);
  }

  /** Restores the latest backup into a scratch server in the add-on's sandbox and records what it found. */
  async drill(userId: string, orgSlug: string, name: string) {
    const { addon } = await this.addons.resolveForAdmin(userId, orgSlug, name);
    this.requirePostgres(addon);
    if (this.kube) {
      this.kube.requireStore();
      await this.syncKube(addon);
    } else this.requireSupervisor();
    const latest = (await this.backupsOf(addon.id)).filter((b) => b.status === 'completed').pop();
    if (!latest)
      throw conflict(`Add-on '${addon.name}' has no backup to drill yet: take one with \`slipway addons backups create ${addon.name}\``);
    return this.runDrill(addon, latest);
  }

  /** Sets (or with null, removes) the query every later drill runs on its restored copy. */
  async setDrillCheck(userId: string, orgSlug: string, name: string, query: string | null) {
    const { addon } = await this.addons.resolveForAdmin(userId, orgSlug, name);
    this.requirePostgres(addon);
    if (query !== null && query.trim().replace(/;+\s*$/, '') === '')
      throw invalid('query', 'give a query that returns rows, e.g. SELECT count(*) FROM users');
    await this.repo.update(addon.id, { drill_check_query: query === null ? null : query.trim() });
    return this.addons.viewOf(addon.id);
  }

  /** The schedule: due base backups, retention, due drills; and records a dead process left in progress. */
  async sweep(): Promise<void> {
    await this.db
      .updateTable('addon_backups')
      .set({ status: 'failed', detail: 'interrupted: the platform stopped while it was taken', finished_at: new Date() })
      .where('status', '=', 'running')
      .where('started_at', '<', this.startedAt)
      .execute();
    await this.db
      .updateTable('addons')
      .set({ status: 'failed', status_detail: 'restore interrupted: the platform stopped meanwhile; delete this add-on and restore again' })
      .where('status', '=', 'creating')
      .where('restored_from', 'is not', null)
      .where('updated_at', '<', this.startedAt)
      .execute();
    if (!this.supervisor && !this.kube) return;
    const rows = await this.db
      .selectFrom('addons')
      .selectAll()
      .where('kind', '=', 'postgres')
      .where('status', '=', 'running')
      .where('deleted_at', 'is', null)
      .execute();
    const now = Date.now();
    if (this.s3) await this.sweepStore(rows);
    for (const addon of rows) {
      if (this.active.has(addon.id)) continue;
      // On Kubernetes the ScheduledBackup takes them: the rows follow the cluster's Backups.
      if (this.kube) await this.syncKube(addon).catch(() => {});
      const completed = (await this.backupsOf(addon.id)).filter((b) => b.status === 'completed');
      const last = completed[completed.length - 1];
      if (
        !this.kube &&
        this.settings.intervalHours > 0 &&
        (!last || now - last.finished_at!.getTime() >= this.settings.intervalHours * 3600_000)
      )
        await this.backup(addon, 'scheduled').catch(() => {});
      const fresh = (await this.repo.find(addon.id))!;
      const drilled = fresh.last_drill ? Date.parse(fresh.last_drill.at) : 0;
      const latest = (await this.backupsOf(addon.id)).filter((b) => b.status === 'completed').pop();
      if (latest && this.settings.drillIntervalHours > 0 && now - drilled >= this.settings.drillIntervalHours * 3600_000)
        await this.runDrill(fresh, latest).catch(() => {});
    }
  }

  /** Ships each add-on's newly archived WAL to the store; hourly, removes purged add-ons' objects past retention. */
  private async sweepStore(running: AddonRow[]) {
    // Only add-ons with a backup in the store: WAL older than every backup restores nothing.
    const inStore = new Set(
      (await this.db.selectFrom('addon_backups').select('addon_id').distinct().where('location', '=', 's3').execute()).map(
        (b) => b.addon_id,
      ),
    );
    for (const addon of running)
      if (inStore.has(addon.id)) await this.s3!.shipWal(addon).catch((err: Error) => this.walShippingStopped(addon, err, 'scheduled'));
    if (Date.now() - this.orphansPrunedAt < 3600_000) return;
    this.orphansPrunedAt = Date.now();
    await removePurgedAddonObjects(this.db, this.s3!.store, this.settings.retentionDays).catch(() => {});
  }

  // --- backups ---

  private async backup(addon: AddonRow, trigger: 'manual' | 'scheduled'): Promise<BackupRow> {
    const supervisor = this.requireSupervisor();
    if (this.active.has(addon.id)) throw conflict(`A backup of '${addon.name}' is being taken: wait for it`);
    this.active.add(addon.id);
    try {
      // A base backup takes about what the previous one took.
      const previous = (await this.backupsOf(addon.id)).filter((b) => b.status === 'completed').pop();
      await this.settings.room?.require(`no backup of '${addon.name}' was taken`, Number(previous?.size_bytes ?? 0));
      const row = await this.db
        .insertInto('addon_backups')
        .values({ id: uuidv7(), addon_id: addon.id, trigger })
        .returningAll()
        .executeTakeFirstOrThrow();
      const c = openCredentials(this.secrets, addon.credentials_sealed);
      const result = await supervisor
        .runTask(addon, baseBackupCommand(supervisor.dirOf(addon.id), addon.port, c.adminUser!, row.id), {
          name: 'addon-backup',
          env: { PGPASSWORD: c.adminPassword! },
          timeoutMs: BACKUP_TIMEOUT_MS,
        })
        .catch((err: Error) => ({ code: -1, stdout: '', stderr: err.message }));
      const out = keyValues(result.stdout);
      let walStopped: Error | null = null;
      let done =
        result.code === 0
          ? { status: 'completed' as const, start_wal: out.start_wal || null, size_bytes: Number(out.size) || null, detail: null }
          : { status: 'failed' as const, detail: `pg_basebackup failed: ${lastLine(result.stderr) ?? `exit code ${result.code}`}` };
      // pg_basebackup removes its partial copy: what is left to say is why.
      const diskFull = done.status === 'failed' && this.settings.room ? await this.settings.room.explains(new Error(result.stderr)) : false;
      if (diskFull) done.detail = `the disk was full (${done.detail}); its partial copy was removed`;
      if (done.status === 'completed' && this.s3) ({ done, walStopped } = await this.upload(addon, row.id, done));
      const finished = await this.db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('addon_backups')
          .set({ ...done, finished_at: new Date() })
          .where('id', '=', row.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        if (updated.status === 'failed')
          await this.publish(trx, addon, 'addon.backup_failed', { backup_id: row.id, detail: updated.detail });
        return updated;
      });
      if (walStopped) await this.walShippingStopped(addon, walStopped, trigger);
      await this.prune(addon);
      if (diskFull) throw this.settings.room!.full(`the backup of '${addon.name}' failed and its partial copy was removed`);
      if (finished.status === 'failed') throw conflict(`The backup of '${addon.name}' failed: ${finished.detail}`);
      return finished;
    } finally {
      this.active.delete(addon.id);
    }
  }

  /** Moves a completed local backup to the store (location `s3`); a refusal fails the backup with the store's reason. */
  private async upload<T extends { start_wal: string | null; size_bytes: number | null }>(addon: AddonRow, id: string, done: T) {
    try {
      await this.s3!.uploadBackup(addon, { id, start_wal: done.start_wal, size_bytes: done.size_bytes ?? 0 });
      // The WAL since it, so the store alone restores to any later time (a full cap is said once the backup is recorded).
      const walStopped = await this.s3!.shipWal(addon).then(
        () => null,
        (err: Error) => err,
      );
      return { done: { ...done, location: 's3' as const }, walStopped };
    } catch (err) {
      await this.supervisor!.runTask(addon, pruneCommand(this.supervisor!.dirOf(addon.id), [id], null), {
        name: 'addon-prune',
        timeoutMs: 600_000,
      });
      return { done: { status: 'failed' as const, detail: `uploading the backup failed: ${(err as Error).message}` }, walStopped: null };
    }
  }

  /**
   * The add-on's WAL reached BACKUP_S3_WAL_CAP_MB in the store: a failed entry in its backups saying
   * so, with `addon.backup_failed`, once (not again while it is still the add-on's newest entry).
   * Other failures of a shipment are retried by the next sweep, as before.
   */
  private async walShippingStopped(addon: AddonRow, err: Error, trigger: 'manual' | 'scheduled') {
    if (!(err instanceof WalCapReached)) return;
    await this.db.transaction().execute(async (trx) => {
      // One at a time per add-on (the sweep and a backup may both see it): the add-on's row is the lock.
      await trx.selectFrom('addons').select('id').where('id', '=', addon.id).forUpdate().execute();
      const newest = await trx
        .selectFrom('addon_backups')
        .select(['status', 'detail'])
        .where('addon_id', '=', addon.id)
        .orderBy('started_at', 'desc')
        .orderBy('id', 'desc')
        .executeTakeFirst();
      if (newest?.status === 'failed' && newest.detail === err.message) return;
      const row = await trx
        .insertInto('addon_backups')
        .values({
          id: uuidv7(),
          addon_id: addon.id,
          trigger,
          status: 'failed',
          location: 's3',
          detail: err.message,
          finished_at: new Date(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await this.publish(trx, addon, 'addon.backup_failed', { backup_id: row.id, detail: err.message });
    });
  }

  /** Retention: backups finished before the window go (the newest completed one always stays), then the WAL older than the oldest kept. */
  private async prune(addon: AddonRow) {
    // A restore reading this add-on's backups (an old one may pass the cutoff meanwhile) keeps them: the next backup's prune runs.
    if (this.restoresFrom.has(addon.id)) return;
    const cutoff = new Date(Date.now() - this.settings.retentionDays * 86_400_000);
    const rows = await this.backupsOf(addon.id);
    const newest = rows.filter((b) => b.status === 'completed').pop();
    const expired = rows.filter((b) => b.status !== 'running' && b.id !== newest?.id && (b.finished_at ?? b.started_at) < cutoff);
    const kept = rows.filter((b) => b.status === 'completed' && !expired.includes(b));
    await this.supervisor!.runTask(
      addon,
      pruneCommand(
        this.supervisor!.dirOf(addon.id),
        expired.map((b) => b.id),
        kept[0]?.start_wal ?? null,
      ),
      { name: 'addon-prune', timeoutMs: 600_000 },
    );
    // A store that refuses (unreachable, a wrong secret) keeps its expired backups' records: the next prune retries them.
    const storeFailed =
      this.s3 && (expired.length || kept[0]?.location === 's3')
        ? await this.s3
            .prune(
              addon.id,
              expired.filter((b) => b.location === 's3').map((b) => b.id),
              kept[0]?.start_wal ?? null,
            )
            .then(() => false)
            .catch(() => true)
        : false;
    const removed = expired.filter((b) => !(storeFailed && b.location === 's3')).map((b) => b.id);
    if (removed.length) await this.db.deleteFrom('addon_backups').where('id', 'in', removed).execute();
  }

  // --- restores ---

  /** Which backup a restore starts from and where it stops; a target outside the window is 422. */
  private async plan(source: AddonRow, body: RestoreRequest): Promise<{ backup: BackupRow; target: RecoveryTarget; label: string }> {
    const completed = (await this.backupsOf(source.id)).filter((b) => b.status === 'completed');
    if (completed.length === 0)
      throw conflict(`Add-on '${source.name}' has no backup yet: take one with \`slipway addons backups create ${source.name}\``);
    if (body.backup_id !== undefined) {
      const backup = completed.find((b) => b.id === body.backup_id);
      if (!backup)
        throw invalid('backup_id', `no completed backup ${body.backup_id} of '${source.name}' (see \`slipway addons backups list\`)`);
      return { backup, target: { immediate: true }, label: `backup ${backup.id}` };
    }
    const live = source.status === 'running' && !source.deleted_at;
    if (body.restore_point !== undefined) {
      const at = restorePointTime(body.restore_point);
      const backup = completed.filter((b) => at === null || b.finished_at! <= at).pop();
      if (!backup || !live)
        throw conflict(
          `Restore point '${body.restore_point}' of '${source.name}' cannot be reached: no backup before it, or the add-on is not running`,
        );
      return { backup, target: { name: body.restore_point }, label: `restore point ${body.restore_point}` };
    }
    const time = new Date(body.time!);
    if (Number.isNaN(time.getTime())) throw invalid('time', 'not a time (ISO 8601, e.g. 2026-11-26T01:02:03Z)');
    const earliest = completed[0]!.finished_at!;
    const now = new Date();
    if (!live) throw conflict(`Add-on '${source.name}' is not running: restore it to a backup (backup_id) instead of a time`);
    if (time < earliest || time > now)
      throw new AppError(
        'VALIDATION',
        `time: ${time.toISOString()} is outside the retention window of '${source.name}' (${earliest.toISOString()} to now); ` +
          'choose a time inside it or a backup (`slipway addons backups list`)',
        [{ field: 'time', message: 'outside the retention window' }],
      );
    const backup = completed.filter((b) => b.finished_at! <= time).pop()!;
    return { backup, target: { time }, label: time.toISOString() };
  }

  /** The restore point a release recorded on this add-on before its release command ran. */
  private async releasePoint(addon: AddonRow, releaseId: string): Promise<string> {
    const release = await this.db
      .selectFrom('releases as r')
      .innerJoin('applications as a', 'a.id', 'r.application_id')
      .innerJoin('projects as p', 'p.id', 'a.project_id')
      .select(['r.version', 'r.release_metadata', 'p.organization_id'])
      .where('r.id', '=', releaseId)
      .executeTakeFirst();
    if (!release || release.organization_id !== addon.organization_id) throw invalid('release_id', 'no such release in this organization');
    const points = (release.release_metadata?.restore_points ?? []) as Array<{ addon_id: string; name: string }>;
    const point = points.find((p) => p.addon_id === addon.id);
    if (!point)
      throw invalid(
        'release_id',
        `release v${release.version} recorded no restore point on '${addon.name}' (only a release with a release command, with the add-on attached and running, does)`,
      );
    return point.name;
  }

  private async runRestore(
    supervisor: AddonSupervisor,
    source: AddonRow,
    fork: AddonRow,
    backup: BackupRow,
    target: RecoveryTarget,
    label: string,
  ) {
    const progress = (detail: string) => this.repo.update(fork.id, { status_detail: detail });
    try {
      if (!('immediate' in target)) {
        await progress('restoring: archiving the source’s latest WAL');
        await this.archiveNow(source);
      }
      await progress(`restoring: copying base backup ${backup.id} and the archived WAL`);
      if (backup.location === 's3') {
        await progress(`restoring: downloading base backup ${backup.id} and the archived WAL from the S3 store`);
        // The WAL archived since the last shipment (up to the segment archiveNow switched to); a backup's end needs none.
        // Past the add-on's WAL cap the rest stays local: taken from there below.
        if (!('immediate' in target))
          await this.s3Store()
            .shipWal(source)
            .catch((err: Error) => {
              if (!(err instanceof WalCapReached)) throw err;
            });
        await this.s3Store().layFork(source, supervisor.dirOf(fork.id), backup, target);
        if (!('immediate' in target)) await this.s3Store().addLocalWal(source, supervisor.dirOf(fork.id), backup.start_wal);
      } else {
        await this.layLocal(supervisor, source, fork, backup, target);
        if (this.s3 && !('immediate' in target)) await this.s3.addStoreWal(source, supervisor.dirOf(fork.id), backup.start_wal);
      }
      await progress(`restoring: replaying WAL to ${label}`);
      const inherited = openCredentials(this.secrets, fork.credentials_sealed);
      await supervisor.startRestored(fork, inherited, RESTORE_TIMEOUT_MS);
      // The fork's own passwords (it came with the source's), and no recovery settings left for its next start.
      const own = { ...inherited, password: newPassword(), adminPassword: newPassword() };
      const client = adminClient(fork.port, inherited, 'postgres');
      await client.connect();
      try {
        for (const setting of RECOVERY_SETTINGS) await client.query(`ALTER SYSTEM RESET ${setting}`);
        await client.query('SELECT pg_reload_conf()');
        await client.query(`ALTER ROLE ${client.escapeIdentifier(own.user)} PASSWORD ${client.escapeLiteral(own.password)}`);
        await client.query(`ALTER ROLE ${client.escapeIdentifier(own.adminUser!)} PASSWORD ${client.escapeLiteral(own.adminPassword!)}`);
      } finally {
        await client.end().catch(() => {});
      }
      await removeBeneath(supervisor.dirOf(fork.id), 'restore-wal');
      await this.db.transaction().execute(async (trx) => {
        await this.repo
          .withDb(trx)
          .update(fork.id, { status: 'running', status_detail: null, credentials_sealed: sealCredentials(this.secrets, own) });
        await this.publish(trx, fork, 'addon.restored', { source_addon_id: source.id, backup_id: backup.id, target: label });
      });
    } catch (err) {
      await supervisor.stop(fork.id).catch(() => {});
      const detail = (await this.settings.room?.explains(err))
        ? 'restore failed: the disk was full; delete this add-on, free space on DATA_DIR (or grow the disk) and restore again'
        : `restore failed: ${(err as Error).message}`;
      await this.repo.update(fork.id, { status: 'failed', status_detail: detail }).catch(() => {});
    }
  }

  /** Copies a local backup and the archived WAL into the fork's directory (as the source's user, both directories writable). */
  private async layLocal(supervisor: AddonSupervisor, source: AddonRow, fork: AddonRow, backup: BackupRow, target: RecoveryTarget) {
    const laid = await supervisor.runTask(
      source,
      restoreCommand(supervisor.dirOf(source.id), supervisor.dirOf(fork.id), { id: backup.id, startWal: backup.start_wal }, target),
      {
        name: 'addon-restore',
        writable: [supervisor.dirOf(source.id), supervisor.dirOf(fork.id)],
        timeoutMs: RESTORE_TIMEOUT_MS,
      },
    );
    if (laid.code !== 0) throw new Error(`copying the backup failed: ${lastLine(laid.stderr) ?? `exit code ${laid.code}`}`);
  }

  /** Makes everything the source committed until now archived: a commit after the target, then a WAL switch, awaited. */
  private async archiveNow(source: AddonRow) {
    const client = adminClient(source.port, openCredentials(this.secrets, source.credentials_sealed), 'postgres');
    await client.connect();
    try {
      // A recovery to a time stops at the first commit after it: there must be one.
      await client.query('SELECT txid_current()');
      const { rows } = await client.query<{ wal: string }>('SELECT pg_walfile_name(pg_switch_wal()) AS wal');
      const deadline = Date.now() + ARCHIVED_WAIT_MS;
      for (;;) {
        const archived = await client.query<{ last: string | null; failed: string | null }>(
          'SELECT last_archived_wal AS last, last_failed_wal AS failed FROM pg_stat_archiver',
        );
        const last = archived.rows[0]?.last ?? '';
        if (last.slice(8) >= rows[0]!.wal.slice(8)) return;
        if (Date.now() > deadline)
          throw new Error(
            `the source did not archive its WAL within ${ARCHIVED_WAIT_MS / 1000} s (last failed: ${archived.rows[0]?.failed})`,
          );
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await client.end().catch(() => {});
    }
  }

  // --- drills ---

  private async runDrill(addon: AddonRow, backup: BackupRow): Promise<AddonDrillResult> {
    if (this.kube) {
      const started = Date.now();
      const found = await this.kube.drill(addon, backup);
      return this.recordDrill(addon, backup, { ...found, at: new Date(started).toISOString(), duration_ms: Date.now() - started });
    }
    const supervisor = this.requireSupervisor();
    const c = openCredentials(this.secrets, addon.credentials_sealed);
    const started = Date.now();
    const check = addon.drill_check_query ? { query: addon.drill_check_query, user: c.user, database: c.database! } : undefined;
    const dir = supervisor.dirOf(addon.id);
    // A backup in the store is downloaded into the add-on's directory first (by its own user), then drilled there.
    const fromStore = backup.location === 's3' ? join(dir, DRILL_DOWNLOAD) : undefined;
    let fetchFailed: string | null = null;
    const fetched = fromStore
      ? this.s3Store()
          .fetchForDrill(addon, backup.id, DRILL_DOWNLOAD)
          .catch((err: Error) => {
            fetchFailed = err.message;
            throw err;
          })
      : Promise.resolve();
    const result = await fetched
      .then(() =>
        supervisor.runTask(addon, drillCommand(dir, backup.id, c.adminUser!, check, fromStore), {
          name: 'addon-drill',
          timeoutMs: RESTORE_TIMEOUT_MS,
        }),
      )
      .catch((err: Error) => ({ code: -1, stdout: '', stderr: err.message }));
    if (fromStore)
      await supervisor.runTask(addon, `rm -rf ${quote(fromStore)}`, { name: 'addon-drill-clean', timeoutMs: 600_000 }).catch(() => {});
    const out = keyValues(result.stdout);
    const ok = result.code === 0;
    const detail = ok
      ? null
      : fetchFailed !== null
        ? `downloading backup ${backup.id} from the store failed: ${fetchFailed}`
        : out.damaged !== undefined
          ? `the backup repository is damaged: backup ${backup.id} does not match its manifest (${out.damaged})`
          : out.check_failed !== undefined
            ? `the check query failed on the restored copy: ${out.check_failed || `exit code ${result.code}`}`
            : `the restored copy did not start: ${out.failed ?? lastLine(result.stderr) ?? `exit code ${result.code}`}`;
    const drill: AddonDrillResult = {
      ok,
      at: new Date(started).toISOString(),
      duration_ms: Date.now() - started,
      backup_id: backup.id,
      detail,
      tables: ok ? drillTables(result.stdout) : {},
      check: check ? { query: check.query, rows: null, first_value: null, ...(ok ? drillCheckResult(result.stdout) : {}) } : null,
    };
    return this.recordDrill(addon, backup, drill);
  }

  /** `last_drill` (and, when it passed, `last_proven_restorable_at`); a failure sends `addon.restore_drill_failed`. */
  private async recordDrill(addon: AddonRow, backup: BackupRow, drill: AddonDrillResult): Promise<AddonDrillResult> {
    const { ok, detail } = drill;
    const started = Date.parse(drill.at);
    await this.db.transaction().execute(async (trx) => {
      await this.repo.withDb(trx).update(addon.id, {
        last_drill: JSON.stringify(drill),
        ...(ok ? { last_proven_restorable_at: new Date(started) } : {}),
      });
      if (!ok) await this.publish(trx, addon, 'addon.restore_drill_failed', { backup_id: backup.id, detail });
    });
    return drill;
  }

  // --- helpers ---

  /** Kubernetes: the rows brought up to the cluster's Backups, then retention applied to them (not while a restore reads them). */
  private async syncKube(addon: AddonRow) {
    if (!this.kube) return;
    await this.kube.sync(addon);
    if (!this.restoresFrom.has(addon.id)) await this.kube.prune(addon).catch(() => {});
  }

  private backupsOf(addonId: string) {
    return this.db.selectFrom('addon_backups').selectAll().where('addon_id', '=', addonId).orderBy('started_at').orderBy('id').execute();
  }

  private requirePostgres(addon: AddonRow) {
    if (addon.kind !== 'postgres')
      throw new AppError('VALIDATION', `Add-on '${addon.name}' is ${addon.kind}: backups and restores are for postgres add-ons`);
  }

  private requireRunningPostgres(addon: AddonRow) {
    this.requirePostgres(addon);
    if (addon.deleted_at || addon.status !== 'running')
      throw conflict(`Add-on '${addon.name}' is ${addon.deleted_at ? 'deleted' : addon.status}: a backup needs its server running`);
  }

  private s3Store(): S3Backups {
    if (!this.s3) throw new Error('this backup is in the S3 store, but BACKUP_S3_ENDPOINT is not set on this platform');
    return this.s3;
  }

  private requireSupervisor(): AddonSupervisor {
    if (!this.supervisor)
      throw conflict(
        'Add-on backups run on the local runtime with its sandbox (RUNTIME=local, RUNTIME_ISOLATION=sandbox) in a process of role all',
      );
    return this.supervisor;
  }

  private publish(db: Db, addon: AddonRow, event: WebhookEvent, data: Record<string, unknown>) {
    return publishWebhookEvent(db, {
      organizationId: addon.organization_id,
      event,
      data: { addon_id: addon.id, name: addon.name, kind: addon.kind, ...data },
    });
  }
}

function backupView(b: BackupRow) {
  return {
    id: b.id,
    status: b.status,
    trigger: b.trigger,
    size_bytes: b.size_bytes === null ? null : Number(b.size_bytes),
    location: b.location,
    detail: b.detail,
    started: iso(b.started_at),
    finished: b.finished_at ? iso(b.finished_at) : null,
  };
}

/** The platform's restore points are named `slipway-<epoch ms>-…`: when it was made, to pick the backup before it. */
function restorePointTime(name: string): Date | null {
  const m = /^slipway-(\d{13})-/.exec(name);
  return m ? new Date(Number(m[1])) : null;
}

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
