/**
 * Add-on backups (issue 31): base backup and restore throughput of a Postgres add-on holding
 * `--mib` MiB (default 1024), and pgbench's TPS against it with WAL archiving on (as every add-on
 * runs). Runs the add-on supervisor and the backup service's own commands (no HTTP), as
 * `bench/addons.ts` does: the backup is pg_basebackup in the add-on's sandbox as its user; the
 * restore lays the backup down into a fork's directory and starts the fork until it accepts
 * connections (recovery to the backup's end). Then the same backup through an S3-compatible store
 * (s3rver behind the tests' signature-checking front, on loopback): uploaded from the sandbox's
 * tar stream, then a fork laid down from the store alone and started.
 *
 *   DATABASE_URL=postgres://superuser@…/postgres npx tsx bench/addon-backups.ts [--mib 1024] [--seconds 20]
 *   … bench/addon-backups.ts --archive off   # pgbench only, without WAL archiving (--mib 0: with, pgbench only)
 *
 * Needs root, bubblewrap, pasta, Debian's postgresql (pgbench included) and a PostgreSQL server for
 * the platform's own records (a scratch database is created there and dropped after).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../src/config.js';
import { generateKeyText, parseKey, SecretBox } from '../src/platform/crypto/secret-box.js';
import { createDb } from '../src/platform/db/database.js';
import { migrateToLatest } from '../src/platform/db/migrate.js';
import {
  AddonSupervisor,
  adminClient,
  baseBackupCommand,
  keyValues,
  newCredentials,
  openCredentials,
  restoreCommand,
  sealCredentials,
} from '../src/platform/addons/index.js';
import { postgresBinDir } from '../src/platform/addons/servers.js';
import { createSandbox } from '../src/platform/sandbox/index.js';
import { createScratchDatabase } from '../test/helpers/scratch-database.js';
import { startTestS3 } from '../test/helpers/s3-server.js';
import { ObjectStore } from '../src/platform/addons/index.js';
import { S3Backups } from '../src/modules/addons/backups-s3.js';

const exec = promisify(execFile);
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  const value = i > 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(value) ? value : fallback;
};
const targetMiB = arg('--mib', 1024);
const seconds = arg('--seconds', 20);
/** `--archive off`: pgbench only, on a server started without WAL archiving (the overhead's baseline). */
const archiveWal = !(process.argv.includes('--archive') && process.argv[process.argv.indexOf('--archive') + 1] === 'off');
const HOUR = 3600_000;
const rate = (bytes: number, ms: number) => `${(bytes / 1024 / 1024 / (ms / 1000)).toFixed(1)} MiB/s`;

async function main() {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('set DATABASE_URL to a PostgreSQL superuser URL (a scratch database is made there)');
  const database = await createScratchDatabase(adminUrl, `slipway_bench_backups_${randomBytes(4).toString('hex')}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-backups-'));
  const config = loadConfig({}, { DATA_DIR: dataDir, DATABASE_URL: database.url });
  const db = createDb(database.url, 4);
  const secrets = new SecretBox({ current: parseKey(generateKeyText()), previous: [] });
  const supervisor = new AddonSupervisor(
    db,
    secrets,
    createSandbox(config, db)!,
    join(dataDir, 'addons'),
    { warn: () => {} },
    { archiveWal },
  );
  try {
    await migrateToLatest(db);
    const org = { id: uuidv7(), name: 'Bench', slug: 'bench' };
    await db.insertInto('organizations').values(org).execute();
    await supervisor.start();
    const credentials = newCredentials('postgres');
    const insert = (name: string, port: number) =>
      db
        .insertInto('addons')
        .values({
          id: uuidv7(),
          organization_id: org.id,
          name,
          kind: 'postgres',
          plan: 'standard',
          port,
          credentials_sealed: sealCredentials(secrets, credentials),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    const source = await insert('db', 15480);
    await supervisor.provision(source);
    const c = openCredentials(secrets, source.credentials_sealed);

    // pgbench first (a small database: scale 10, ~150 MiB), archiving on as every add-on runs.
    const env = { ...process.env, PGPASSWORD: c.adminPassword! };
    const pgbench = join(postgresBinDir()!, 'pgbench');
    const conn = ['-h', '127.0.0.1', '-p', String(source.port), '-U', c.adminUser!];
    await exec(pgbench, [...conn, '-i', '-q', '-s', '10', 'postgres'], { env, maxBuffer: 16 * 1024 * 1024 });
    const bench = await exec(pgbench, [...conn, '-c', '4', '-j', '2', '-T', String(seconds), 'postgres'], { env });
    const tps = /tps = ([\d.]+)/.exec(bench.stdout)?.[1];
    console.log(`pgbench (scale 10, 4 clients, ${seconds} s), WAL archiving ${archiveWal ? 'on' : 'off'}: ${tps} tps`);
    if (!archiveWal || targetMiB === 0) {
      await supervisor.remove(source.id);
      return;
    }

    // Fill to about the target size (rows of ~1 KiB), in statements of 64 MiB.
    const client = adminClient(source.port, c, c.database!);
    await client.connect();
    await client.query('SET statement_timeout = 0');
    await client.query('CREATE TABLE filler (id bigint, payload text)');
    const rowsPerChunk = 64 * 1024;
    const fillStarted = performance.now();
    for (let done = 0; done < targetMiB * 1024; done += rowsPerChunk)
      await client.query(
        `INSERT INTO filler SELECT g, repeat(md5(g::text), 28) FROM generate_series(${done + 1}, ${done + rowsPerChunk}) AS g`,
      );
    const { rows } = await client.query<{ bytes: string }>('SELECT sum(pg_database_size(datname))::text AS bytes FROM pg_database');
    await client.end();
    const clusterBytes = Number(rows[0]!.bytes);
    console.log(
      `filled: ${(clusterBytes / 1024 / 1024).toFixed(0)} MiB in all databases (${((performance.now() - fillStarted) / 1000).toFixed(0)} s)`,
    );

    const backupId = uuidv7();
    const backupStarted = performance.now();
    const backup = await supervisor.runTask(source, baseBackupCommand(supervisor.dirOf(source.id), source.port, c.adminUser!, backupId), {
      name: 'addon-backup',
      env: { PGPASSWORD: c.adminPassword! },
      timeoutMs: HOUR,
    });
    const backupMs = performance.now() - backupStarted;
    if (backup.code !== 0) throw new Error(`backup failed: ${backup.stderr.slice(-500)}`);
    const out = keyValues(backup.stdout);
    const size = Number(out.size);
    console.log(`base backup: ${(size / 1024 / 1024).toFixed(0)} MiB in ${(backupMs / 1000).toFixed(1)} s = ${rate(size, backupMs)}`);

    const fork = await insert('db-fork', 15481);
    const restoreStarted = performance.now();
    const laid = await supervisor.runTask(
      source,
      restoreCommand(
        supervisor.dirOf(source.id),
        supervisor.dirOf(fork.id),
        { id: backupId, startWal: out.start_wal ?? null },
        { immediate: true },
      ),
      { name: 'addon-restore', writable: [supervisor.dirOf(source.id), supervisor.dirOf(fork.id)], timeoutMs: HOUR },
    );
    if (laid.code !== 0) throw new Error(`restore failed: ${laid.stderr.slice(-500)}`);
    const copiedMs = performance.now() - restoreStarted;
    await supervisor.startRestored(fork, credentials, HOUR);
    const restoreMs = performance.now() - restoreStarted;
    console.log(
      `restore: copy ${(copiedMs / 1000).toFixed(1)} s, then recovered and accepting connections at ${(restoreMs / 1000).toFixed(1)} s = ${rate(size, restoreMs)}`,
    );
    await supervisor.remove(fork.id);

    // The same backup through an S3-compatible store: upload (the local copy is then removed), restore from it alone.
    const s3 = await startTestS3();
    try {
      const store = new ObjectStore({
        endpoint: s3.endpoint,
        bucket: s3.bucket,
        region: 'us-east-1',
        prefix: 'bench/',
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secret,
        forcePathStyle: true,
      });
      const backups = new S3Backups(store, supervisor);
      const uploadStarted = performance.now();
      const sent = await backups.uploadBackup(source, { id: backupId, start_wal: out.start_wal ?? null, size_bytes: size });
      const uploadMs = performance.now() - uploadStarted;
      console.log(
        `S3 upload (s3rver on loopback): ${(sent / 1024 / 1024).toFixed(0)} MiB tar in ${(uploadMs / 1000).toFixed(1)} s = ${rate(sent, uploadMs)}`,
      );
      const fromStore = await insert('db-from-s3', 15482);
      const s3RestoreStarted = performance.now();
      await backups.layFork(
        source,
        supervisor.dirOf(fromStore.id),
        { id: backupId, start_wal: out.start_wal ?? null },
        { immediate: true },
      );
      const s3LaidMs = performance.now() - s3RestoreStarted;
      await supervisor.startRestored(fromStore, credentials, HOUR);
      const s3RestoreMs = performance.now() - s3RestoreStarted;
      console.log(
        `restore from S3: download and extract ${(s3LaidMs / 1000).toFixed(1)} s, accepting connections at ${(s3RestoreMs / 1000).toFixed(1)} s = ${rate(size, s3RestoreMs)}`,
      );
      await supervisor.remove(fromStore.id);
    } finally {
      await s3.close();
    }
    await supervisor.remove(source.id);
  } finally {
    await supervisor.shutdown();
    await db.destroy();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
