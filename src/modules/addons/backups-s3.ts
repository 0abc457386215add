import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract as tarExtract, pack as tarPack } from 'tar-stream';
import type { Db } from '../../platform/db/database.js';
import {
  baseBackupTarCommand,
  extractCommand,
  pruneCommand,
  recoverySettingsCommand,
  WAL_NAME,
  walListCommand,
  walListed,
  localWalCommand,
  mergeStoreWalCommand,
  walNeeded,
  walTarCommand,
  walTrimCommand,
  type AddonRecord,
  type AddonSupervisor,
  type ObjectStore,
  type RecoveryTarget,
} from '../../platform/addons/index.js';

const TASK_TIMEOUT_MS = 3600_000;
/** Archived WAL files shipped per sandboxed task (at 16 MiB a segment: 1 GiB). */
const WAL_BATCH = 64;
/** Largest archived WAL file accepted (wal_segment_size is at most 1 GiB). */
const MAX_WAL_BYTES = 1024 ** 3;
/** A tar of a backup is its files plus headers and padding: what the stream may exceed its recorded size by. */
const TAR_SLACK = (bytes: number) => Math.ceil(bytes * 0.05) + 64 * 1024 * 1024;

/**
 * A Postgres add-on's backups in an S3-compatible store (BACKUP_S3_*). The add-on's sandbox stays
 * offline: a task run as its user writes a tar on its standard output, the platform streams it
 * into the store; a restore or a drill streams it back into a sandboxed `tar -x` as the add-on's
 * user. The platform never reads nor writes a file of the add-on's directory itself.
 *
 * Layout: `<prefix><add-on id>/base/<backup id>.tar` (the backup's directory, its manifest inside)
 * and `base/<backup id>.json` (what the platform recorded, written last: a tar without it is an
 * upload that did not finish), `wal/<segment>` (one object per archived WAL file). The listing of
 * `wal/` is the record of what was shipped: an upload is atomic (an object exists whole or not at
 * all) and a segment's key is its name, so a crash mid-way never loses one (it is shipped again
 * from the local repository, which drops a segment only once the store lists it) nor duplicates one.
 */
export class S3Backups {
  /** One shipment of an add-on's WAL at a time; a caller that needs the latest waits for the next one. */
  private readonly shipping = new Map<string, Promise<void>>();

  constructor(
    readonly store: ObjectStore,
    private readonly supervisor: AddonSupervisor,
    /** BACKUP_S3_WAL_CAP_MB in bytes: most archived WAL one add-on keeps in the store (0: no cap). */
    private readonly walCapBytes = 0,
  ) {}

  /** Uploads a completed local base backup (bounded by its own size), then removes the local copy. Returns the bytes uploaded. */
  async uploadBackup(addon: AddonRecord, backup: { id: string; start_wal: string | null; size_bytes: number }): Promise<number> {
    const dir = this.supervisor.dirOf(addon.id);
    const limit = backup.size_bytes + TAR_SLACK(backup.size_bytes);
    const sent = await this.fromTask(addon, 'addon-backup-upload', baseBackupTarCommand(dir, backup.id), (stdout) =>
      this.store.upload(this.store.key(addon.id, `base/${backup.id}.tar`), stdout.pipe(bounded(limit)), limit),
    );
    await this.store.put(
      this.store.key(addon.id, `base/${backup.id}.json`),
      JSON.stringify({
        backup_id: backup.id,
        addon_id: addon.id,
        start_wal: backup.start_wal,
        size_bytes: backup.size_bytes,
        tar_bytes: sent,
      }),
    );
    // The store holds it now: a local copy left behind (the task failed) is removed by the next prune, never failing the backup.
    await this.supervisor.runTask(addon, pruneCommand(dir, [backup.id], null), { name: 'addon-prune', timeoutMs: 600_000 }).catch(() => {});
    return sent;
  }

  /**
   * Ships the archived WAL the store does not hold yet, then removes locally what it holds. A call
   * while a shipment runs waits for it and ships again (what was archived meanwhile).
   */
  async shipWal(addon: AddonRecord): Promise<void> {
    const running = this.shipping.get(addon.id);
    const next = (running ?? Promise.resolve())
      .catch(() => {})
      .then(() => this.shipOnce(addon))
      .finally(() => {
        if (this.shipping.get(addon.id) === next) this.shipping.delete(addon.id);
      });
    this.shipping.set(addon.id, next);
    return next;
  }

  private async shipOnce(addon: AddonRecord) {
    const dir = this.supervisor.dirOf(addon.id);
    const listed = await this.supervisor.runTask(addon, walListCommand(dir), { name: 'addon-wal-list', timeoutMs: 600_000 });
    if (listed.code !== 0) throw new Error(`listing the archived WAL failed: ${lastLine(listed.stderr) ?? `exit code ${listed.code}`}`);
    const local = walListed(listed.stdout);
    if (local.length === 0) return;
    const stored = new Map((await this.store.list(this.store.key(addon.id, 'wal/'))).map((o) => [o.key, o.size]));
    const held = (name: string, size: number) => stored.get(this.store.key(addon.id, `wal/${name}`)) === size;
    // In WAL order (a history file sorts before its timeline's segments), so what is shipped stays contiguous.
    const candidates = local.filter((f) => !held(f.name, f.size) && f.size <= MAX_WAL_BYTES).sort((a, b) => (a.name < b.name ? -1 : 1));
    let storedBytes = [...stored.values()].reduce((sum, size) => sum + size, 0);
    const pending: string[] = [];
    let over: string | null = null;
    for (const f of candidates) {
      const replaced = stored.get(this.store.key(addon.id, `wal/${f.name}`)) ?? 0;
      if (this.walCapBytes > 0 && storedBytes - replaced + f.size > this.walCapBytes) {
        over = f.name;
        break;
      }
      storedBytes += f.size - replaced;
      pending.push(f.name);
    }
    for (let i = 0; i < pending.length; i += WAL_BATCH) {
      const batch = pending.slice(i, i + WAL_BATCH);
      const wanted = new Set(batch);
      const limit = local.filter((f) => wanted.has(f.name)).reduce((sum, f) => sum + f.size + 1024, 1024 * 1024);
      await this.fromTask(addon, 'addon-wal-upload', walTarCommand(dir, batch), async (stdout) => {
        const entries = tarExtract();
        const reading = pipeline(stdout, bounded(limit), entries);
        // Awaited below; an upload failing first ends the loop and the stream (its rejection is not lost).
        reading.catch(() => {});
        for await (const entry of entries) {
          const { name, size, type } = entry.header;
          // Only the files asked for, whole: anything else in the stream (a link put in a name's place) is skipped.
          if (type === 'file' && wanted.has(name) && WAL_NAME.test(name)) {
            await this.store.upload(this.store.key(addon.id, `wal/${name}`), Readable.from(entry), size);
            stored.set(this.store.key(addon.id, `wal/${name}`), size);
          } else entry.resume();
        }
        await reading;
        return 0;
      });
    }
    const shipped = local.filter((f) => held(f.name, f.size)).map((f) => f.name);
    if (shipped.length) await this.supervisor.runTask(addon, walTrimCommand(dir, shipped), { name: 'addon-wal-trim', timeoutMs: 600_000 });
    if (over !== null)
      throw new WalCapReached(
        `shipping WAL to the backup store stopped: this add-on's WAL there reached its cap of ${Math.floor(this.walCapBytes / 1024 / 1024)} MiB ` +
          `(BACKUP_S3_WAL_CAP_MB). WAL from segment ${over} on stays in the add-on's own directory only: restores still use it, ` +
          'but the store alone restores no later than before it. Shipping resumes once retention has removed older WAL ' +
          '(backups older than the retention period); to keep more, ask the operator to raise BACKUP_S3_WAL_CAP_MB',
      );
  }

  /**
   * Lays down a fork's data from the store (run as the SOURCE add-on's user, the fork's directory
   * alone writable): the base backup, the WAL from its first segment on, the recovery settings.
   */
  async layFork(source: AddonRecord, forkDir: string, backup: { id: string; start_wal: string | null }, target: RecoveryTarget) {
    // The source's directory is its working directory (read only here); the fork's is where it writes.
    const options = { name: 'addon-restore', writable: [this.supervisor.dirOf(source.id), forkDir], timeoutMs: TASK_TIMEOUT_MS };
    await this.intoTask(
      source,
      extractCommand(`${forkDir}/data`),
      await this.store.download(this.store.key(source.id, `base/${backup.id}.tar`)),
      options,
    );
    if (!('immediate' in target)) {
      const sizes = new Map(
        (await this.store.list(this.store.key(source.id, 'wal/'))).map((o) => [o.key.slice(o.key.lastIndexOf('/') + 1), o.size]),
      );
      const needed = walNeeded([...sizes.keys()], backup.start_wal).map((name) => ({ name, size: sizes.get(name)! }));
      await this.intoTask(source, extractCommand(`${forkDir}/restore-wal`), this.walTar(source.id, needed), options);
    }
    const laid = await this.supervisor.runTask(source, recoverySettingsCommand(forkDir, target), options);
    if (laid.code !== 0) throw new Error(`preparing the recovery failed: ${lastLine(laid.stderr) ?? `exit code ${laid.code}`}`);
  }

  /**
   * A restore from a backup in the store to a time: the archived WAL still only in the source's
   * directory (not shipped yet, or held back by BACKUP_S3_WAL_CAP_MB) joins what the store gave.
   */
  async addLocalWal(source: AddonRecord, forkDir: string, startWal: string | null) {
    const options = { name: 'addon-restore', writable: [this.supervisor.dirOf(source.id), forkDir], timeoutMs: TASK_TIMEOUT_MS };
    const laid = await this.supervisor.runTask(source, localWalCommand(this.supervisor.dirOf(source.id), forkDir, startWal), options);
    if (laid.code !== 0) throw new Error(`adding the local WAL failed: ${lastLine(laid.stderr) ?? `exit code ${laid.code}`}`);
  }

  /**
   * A restore from a LOCAL backup to a time: the WAL it needs may since have been shipped here and
   * trimmed locally, so the store's segments from the backup's first on join the fork's `restore-wal`.
   */
  async addStoreWal(source: AddonRecord, forkDir: string, startWal: string | null) {
    const options = { name: 'addon-restore', writable: [this.supervisor.dirOf(source.id), forkDir], timeoutMs: TASK_TIMEOUT_MS };
    const sizes = new Map(
      (await this.store.list(this.store.key(source.id, 'wal/'))).map((o) => [o.key.slice(o.key.lastIndexOf('/') + 1), o.size]),
    );
    const needed = walNeeded([...sizes.keys()], startWal).map((name) => ({ name, size: sizes.get(name)! }));
    if (!needed.length) return;
    await this.intoTask(source, extractCommand(`${forkDir}/restore-wal-store`), this.walTar(source.id, needed), options);
    const merged = await this.supervisor.runTask(source, mergeStoreWalCommand(forkDir), options);
    if (merged.code !== 0) throw new Error(`adding the store's WAL failed: ${lastLine(merged.stderr) ?? `exit code ${merged.code}`}`);
  }

  /** Extracts a base backup from the store into `<add-on dir>/<into>` for a drill (as the add-on's user). */
  async fetchForDrill(addon: AddonRecord, backupId: string, into: string) {
    const body = await this.store.download(this.store.key(addon.id, `base/${backupId}.tar`));
    await this.intoTask(addon, extractCommand(`${this.supervisor.dirOf(addon.id)}/${into}`), body, {
      name: 'addon-drill-fetch',
      timeoutMs: TASK_TIMEOUT_MS,
    });
  }

  /** Retention in the store: the expired backups' objects, and the WAL older than the oldest backup kept (histories stay). */
  async prune(addonId: string, expiredIds: string[], oldestKeptStartWal: string | null) {
    const keys = expiredIds.flatMap((id) => [this.store.key(addonId, `base/${id}.json`), this.store.key(addonId, `base/${id}.tar`)]);
    if (oldestKeptStartWal && /^[0-9A-F]{24}$/.test(oldestKeptStartWal))
      for (const o of await this.store.list(this.store.key(addonId, 'wal/'))) {
        const name = o.key.slice(o.key.lastIndexOf('/') + 1);
        if (/^[0-9A-F]{24}/.test(name) && name.slice(8, 24) < oldestKeptStartWal.slice(8)) keys.push(o.key);
      }
    await this.store.remove(keys);
  }

  /** A tar of the named WAL objects, downloaded one after the other (one segment in flight). */
  private walTar(addonId: string, files: Array<{ name: string; size: number }>): Readable {
    const pack = tarPack();
    void (async () => {
      for (const { name, size } of files) {
        await pipeline(await this.store.download(this.store.key(addonId, `wal/${name}`)), pack.entry({ name, size, mode: 0o600 }));
      }
      pack.finalize();
    })().catch((err: Error) => pack.destroy(err));
    return Readable.from(pack);
  }

  /** Runs a task whose standard output `consume` reads; fails with the consumer's error (the store's reason) first. */
  private async fromTask<T>(addon: AddonRecord, name: string, command: string, consume: (stdout: Readable) => Promise<T>): Promise<T> {
    let consumed: Promise<T> | null = null;
    const result = await this.supervisor.runTask(addon, command, {
      name,
      timeoutMs: TASK_TIMEOUT_MS,
      takeStdout: (stdout) => {
        consumed = consume(stdout);
        // Its failure ends the task: the child's writes then fail (EPIPE) and it exits.
        consumed.catch(() => stdout.destroy());
      },
    });
    const value = await (consumed as Promise<T> | null)!;
    if (result.code !== 0) throw new Error(`${name} failed: ${lastLine(result.stderr) ?? `exit code ${result.code}`}`);
    return value;
  }

  /** Runs a task reading `body` on its standard input; the body's error (the store's reason) wins over the task's exit. */
  private async intoTask(
    addon: AddonRecord,
    command: string,
    body: Readable,
    options: { name: string; writable?: string[]; timeoutMs: number },
  ) {
    let failure: Error | null = null;
    body.on('error', (err) => (failure ??= err));
    // A task that ended early leaves the download unread: destroyed, so its socket (and a WAL pack loop) never hangs.
    const result = await this.supervisor.runTask(addon, command, { ...options, stdin: body }).finally(() => body.destroy());
    if (failure) throw failure;
    if (result.code !== 0) throw new Error(`${options.name} failed: ${lastLine(result.stderr) ?? `exit code ${result.code}`}`);
  }
}

/**
 * The objects of purged add-ons (an id below the prefix with no add-on record): kept for the
 * retention period after their newest object (a backup outlives the add-on, as users expect), then
 * removed. Run by the backups sweep hourly. Returns the ids whose objects were removed.
 */
export async function removePurgedAddonObjects(db: Db, store: ObjectStore, retentionDays: number): Promise<string[]> {
  const known = new Set((await db.selectFrom('addons').select('id').execute()).map((a) => a.id));
  const cutoff = Date.now() - retentionDays * 86_400_000;
  const removed: string[] = [];
  for (const id of await store.addonIds()) {
    // Only an add-on's own prefix (a uuid): anything else someone keeps below the prefix is not ours to remove.
    if (known.has(id) || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) continue;
    const objects = await store.list(store.key(id, ''));
    if (objects.length && objects.every((o) => o.modified.getTime() < cutoff)) {
      await store.remove(objects.map((o) => o.key));
      removed.push(id);
    }
  }
  return removed;
}

/** An add-on's WAL in the store reached BACKUP_S3_WAL_CAP_MB: its message is for the member (a failed backup entry). */
export class WalCapReached extends Error {}

/** Passes at most `limit` bytes, then fails: a task's output is bounded by what it should hold. */
function bounded(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > limit) return done(new Error(`the backup stream exceeded its expected ${limit} bytes`));
      done(null, chunk);
    },
  });
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
