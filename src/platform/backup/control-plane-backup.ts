import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, open, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Config } from '../../config.js';
import { embeddedSuperuserUrl, PLATFORM_ROLE } from '../db/embedded.js';

/**
 * The operator's backup of the control plane (issue 37): one tar archive (mode 0600) of
 * - the embedded PostgreSQL's cluster, copied online with PostgreSQL's low-level base backup
 *   (`pg_backup_start` / `pg_backup_stop`, the server's own format: no pg_dump of a matching
 *   major version is needed, and the restored cluster recovers to the moment the copy ended);
 * - the keys under DATA_DIR: `secret.key` (the SecretBox sealing every secret config value),
 *   the database passwords, `registry/` (the registry token signing key and certificates);
 * - `images/`: the built artifacts the releases run.
 * Caches, build work directories, logs and sockets are left out: they are rebuilt.
 * With DATABASE_URL (an external database) only the files are archived: that database is
 * backed up with its own tools (pg_dump of the server's version).
 */

const MANIFEST = 'slipway-backup.json';
const FORMAT = 'slipway-control-plane-backup';
const CLUSTER = 'postgres';
/** Files and folders of DATA_DIR the archive carries besides the cluster. */
const KEPT = ['secret.key', 'postgres.password', `postgres.${PLATFORM_ROLE}.password`, 'registry', 'images'];
/** What a running cluster has that a copy must not (a copy would think its server still runs). */
const CLUSTER_EXCLUDED = [`${CLUSTER}/pg_wal`, `${CLUSTER}/postmaster.pid`, `${CLUSTER}/postmaster.opts`, `${CLUSTER}/pg_replslot/*`];

export class BackupError extends Error {}

export interface BackupManifest {
  format: typeof FORMAT;
  version: 1;
  created: string;
  database: 'embedded' | 'external';
  /** DATA_DIR where the backup was made: artifact paths in the database are recorded under it. */
  dataDir: string;
  members: string[];
}

/** GNU tar; `tolerateChanged` accepts exit 1 ("file changed as we read it"), expected while PostgreSQL writes. */
function tar(args: string[], options: { tolerateChanged?: boolean } = {}): Promise<string> {
  return new Promise((done, fail) => {
    execFile('tar', args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      if (!err || (options.tolerateChanged && code === 1)) return done(stdout);
      fail(new BackupError(`tar ${args[0]} failed (${code ?? err.message}): ${stderr.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

export async function backupControlPlane(config: Config, file: string): Promise<{ file: string; bytes: number; members: string[] }> {
  const target = resolve(file);
  const dataDir = config.dataDir;
  const embedded = !config.DATABASE_URL;
  if (embedded && !existsSync(join(dataDir, CLUSTER, 'PG_VERSION'))) throw new BackupError(`No embedded PostgreSQL cluster in ${dataDir}`);
  // Created here, exclusively and 0600 whatever the umask: it holds every key of the platform.
  try {
    await (await open(target, 'wx', 0o600)).close();
  } catch (err) {
    throw new BackupError(
      `Cannot create ${target}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} (it must not exist yet)`,
    );
  }
  await chmod(target, 0o600);
  const scratch = await mkdtemp(join(tmpdir(), 'slipway-backup-'));
  try {
    const members = KEPT.filter((m) => existsSync(join(dataDir, m)));
    if (embedded) {
      await copyClusterOnline(config, target, scratch);
      members.unshift(CLUSTER);
    }
    const fileMembers = members.filter((m) => m !== CLUSTER);
    if (fileMembers.length > 0) await tar(['-rf', target, '-C', dataDir, ...fileMembers]);
    const manifest: BackupManifest = {
      format: FORMAT,
      version: 1,
      created: new Date().toISOString(),
      database: embedded ? 'embedded' : 'external',
      dataDir,
      members,
    };
    await writeFile(join(scratch, MANIFEST), JSON.stringify(manifest, null, 2), { mode: 0o600 });
    await tar(['-rf', target, '-C', scratch, MANIFEST]);
    return { file: target, bytes: (await stat(target)).size, members };
  } catch (err) {
    await rm(target, { force: true });
    throw err;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The cluster's files copied between `pg_backup_start` and `pg_backup_stop` (one session), then
 * its WAL up to the backup's end, then the backup label that tells the restored server where
 * recovery starts. The server keeps serving throughout.
 */
async function copyClusterOnline(config: Config, target: string, scratch: string) {
  const client = new pg.Client({ connectionString: embeddedSuperuserUrl(config.dataDir, config.EMBEDDED_PG_PORT) });
  client.on('error', () => {}); // a broken connection fails the query below, which reports it
  await client.connect();
  try {
    await client.query(`select pg_backup_start($1, true)`, [`slipway-admin backup ${randomBytes(4).toString('hex')}`]);
    let label: string;
    try {
      await tar(['-cf', target, '-C', config.dataDir, ...CLUSTER_EXCLUDED.map((p) => `--exclude=${p}`), CLUSTER], {
        tolerateChanged: true,
      });
    } finally {
      const stopped = await client.query<{ labelfile: string }>(`select labelfile from pg_backup_stop(false)`);
      label = stopped.rows[0]!.labelfile;
    }
    // Completes the WAL segment holding the backup's end, so the copy of pg_wal below has it on disk.
    await client.query(`select pg_switch_wal()`);
    await tar(['-rf', target, '-C', config.dataDir, `${CLUSTER}/pg_wal`], { tolerateChanged: true });
    await writeFile(join(scratch, 'backup_label'), label, { mode: 0o600 });
    await tar(['-rf', target, '-C', scratch, `--transform=s,^backup_label$,${CLUSTER}/backup_label,`, 'backup_label']);
  } finally {
    await client.end().catch(() => {}); // the backup's own error is the one to report
  }
}

/**
 * Unpacks a backup into DATA_DIR: refused when DATA_DIR holds anything unless `force` (then what
 * the archive carries replaces what is there; a running embedded server is never overwritten).
 */
export async function restoreControlPlane(config: Config, file: string, options: { force?: boolean } = {}): Promise<BackupManifest> {
  const source = resolve(file);
  const dataDir = config.dataDir;
  if (!existsSync(source)) throw new BackupError(`No backup at ${source}`);
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(await tar(['-xOf', source, MANIFEST])) as BackupManifest;
  } catch {
    throw new BackupError(`${source} is not a Slipway control-plane backup (no ${MANIFEST} in it)`);
  }
  if (manifest.format !== FORMAT || manifest.version !== 1) throw new BackupError(`${source}: unknown backup format`);
  if (manifest.database === 'embedded' && config.DATABASE_URL)
    throw new BackupError('The backup holds the embedded database but DATABASE_URL is set: unset it to restore onto the embedded one');
  const present = existsSync(dataDir) ? readdirSync(dataDir) : [];
  if (present.length > 0) {
    if (!options.force) throw new BackupError(`${dataDir} is not empty: restore onto a fresh data directory, or pass --force to replace`);
    if (serverRunsIn(dataDir)) throw new BackupError(`The embedded PostgreSQL of ${dataDir} is running: stop Slipway first`);
    for (const member of manifest.members) await rm(join(dataDir, member), { recursive: true, force: true });
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // As root, tar keeps the archived owners (by name: the cluster stays the `postgres` user's) and modes.
  await tar(['-xf', source, '-C', dataDir, `--exclude=${MANIFEST}`]);
  if (manifest.database === 'embedded' && process.getuid?.() === 0) await ownClusterByServerUser(join(dataDir, CLUSTER));
  return manifest;
}

/**
 * On another machine the `postgres` user (which the embedded server runs as under root) may have
 * other ids than where the backup was made: the cluster is handed to it, as PostgreSQL requires.
 */
async function ownClusterByServerUser(clusterDir: string) {
  await new Promise<void>((done, fail) =>
    execFile('chown', ['-R', 'postgres:', clusterDir], (err, _out, stderr) =>
      err ? fail(new BackupError(`Cannot hand ${clusterDir} to the postgres user: ${stderr.trim()}`)) : done(),
    ),
  );
  await chmod(clusterDir, 0o700);
}

/** Whether the cluster's postmaster.pid names a live process. */
function serverRunsIn(dataDir: string): boolean {
  const pidFile = join(dataDir, CLUSTER, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
