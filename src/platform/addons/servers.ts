import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import type { AddonKind } from '../db/schema.js';
import type { AddonCredentials } from './credentials.js';
import type { AddonPlan } from './plans.js';

/**
 * Debian's PostgreSQL server binaries (package postgresql), newest major first: they lie in /usr,
 * which every sandbox sees read-only, get the distribution's security updates, and ship the
 * tools later backup work needs (pg_basebackup, pg_receivewal). See docs/addons.md.
 */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const majors = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], 'bin') : null;
}

export const REDIS_SERVER = '/usr/bin/redis-server';

/** systemd's socket activator and proxy (Debian package systemd), an add-on's forwarder (see forwarder.ts). */
export const SOCKET_ACTIVATE = '/usr/bin/systemd-socket-activate';
export const SOCKET_PROXY = '/lib/systemd/systemd-socket-proxyd';

/** The program a kind needs, or why it cannot run here (named with its Debian package). */
export function missingServer(kind: AddonKind): string | null {
  if (!existsSync(SOCKET_ACTIVATE) || !existsSync(SOCKET_PROXY))
    return 'systemd-socket-activate and systemd-socket-proxyd are not installed (Debian package systemd)';
  if (kind === 'postgres') return postgresBinDir() ? null : 'PostgreSQL server binaries are not installed (Debian package postgresql)';
  return existsSync(REDIS_SERVER) ? null : 'redis-server is not installed (Debian package redis-server)';
}

export const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The add-on's backup repository, beside its data in its own directory: `base/<backup id>` and `wal/`. */
export const REPOSITORY = 'repo';

/** The server's socket directory, beside its data (relative to it in its settings: a socket path is short). */
export const SOCKETS = 'run';

/** The server's unix socket, in its own directory: the only way into its sandbox (see forwarder.ts). */
export function serverSocket(kind: AddonKind, dir: string, port: number): string {
  return join(dir, SOCKETS, kind === 'postgres' ? `.s.PGSQL.${port}` : `redis-${port}.sock`);
}

/** A WAL segment is archived at least this often while anything is written (bounds what a crash can lose of the archive). */
const ARCHIVE_TIMEOUT_S = 60;

/**
 * Postgres' archive_command, run by the server (the add-on's user, in its sandbox): copies the
 * segment under a temporary name, syncs it, then renames it, so the repository never holds half a segment.
 * A segment already there (archived before a crash) is accepted only if it is the same.
 */
function archiveCommand(wal: string): string {
  // mkdir: a repository lost (a disk replaced, removed by hand) does not stop archiving. The syncs: Postgres
  // recycles a segment once this succeeds, so the copy and its name must be on disk first (a machine crash
  // right after would otherwise lose a segment the repository claims).
  return `mkdir -p ${quote(wal)}; f=${quote(wal)}/%f; if [ -f "$f" ]; then cmp -s %p "$f"; else cp %p "$f.part" && sync "$f.part" && mv "$f.part" "$f" && sync ${quote(wal)}; fi`;
}

/**
 * The command that creates a Postgres cluster in `dir/data` (run once, in the add-on's sandbox,
 * as its user): the superuser is the platform's, its password read from the environment.
 */
export function postgresInitCommand(dir: string, adminUser: string): string {
  const bin = postgresBinDir()!;
  const pwfile = join(dir, '.pwfile');
  return [
    'umask 077',
    `printf '%s\\n' "$ADDON_ADMIN_PASSWORD" > ${quote(pwfile)}`,
    `${quote(join(bin, 'initdb'))} -D ${quote(join(dir, 'data'))} -U ${quote(adminUser)} --pwfile=${quote(pwfile)} --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 -N >/dev/null; status=$?`,
    `rm -f ${quote(pwfile)}`,
    'exit $status',
  ].join('\n');
}

/**
 * The server's command line, run under its shim in the add-on's sandbox. Settings it writes
 * itself (as the add-on's user, inside its sandbox: the platform never writes into a directory
 * the server's user owns). Postgres: TCP on its own loopback only (no unix socket), scram only,
 * the plan's connections and buffers. Redis: password, AOF on, the plan's memory.
 */
export function serverCommand(kind: AddonKind, dir: string, port: number, plan: AddonPlan, { archiveWal = true } = {}): string {
  const data = join(dir, 'data');
  if (kind === 'postgres') {
    const bin = postgresBinDir()!;
    // No TCP: its network namespace has nothing but its loopback. Every client (the attached
    // applications, the platform, pg_basebackup) comes through the socket in the add-on's own
    // directory (SOCKETS), the platform's forwarder relaying the host's loopback port to it.
    const hba = 'local all all scram-sha-256\\nlocal replication slipway scram-sha-256\\n';
    const wal = join(dir, REPOSITORY, 'wal');
    return [
      'umask 077',
      `mkdir -p ${quote(wal)} ${quote(join(dir, REPOSITORY, 'base'))} ${quote(join(dir, SOCKETS))}`,
      `printf '${hba}' > ${quote(join(data, 'pg_hba.conf'))}`,
      `exec ${quote(join(bin, 'postgres'))} -D ${quote(data)} -c listen_addresses= -c port=${port}` +
        ` -c max_connections=${plan.connections} -c shared_buffers=${plan.sharedBuffersMiB}MB -c unix_socket_directories=../${SOCKETS}` +
        ' -c dynamic_shared_memory_type=mmap -c password_encryption=scram-sha-256 -c logging_collector=off' +
        (archiveWal
          ? ` -c wal_level=replica -c archive_mode=on -c archive_timeout=${ARCHIVE_TIMEOUT_S} -c ${quote(`archive_command=${archiveCommand(wal)}`)}`
          : ' -c wal_level=replica -c archive_mode=off'),
    ].join('\n');
  }
  const conf = join(dir, 'redis.conf');
  // No TCP (as Postgres): only its unix socket, which the platform's forwarder relays to.
  const settings = [
    'port 0',
    `unixsocket ${serverSocket('redis', dir, port)}`,
    'unixsocketperm 700',
    'protected-mode yes',
    'daemonize no',
    `dir ${data}`,
    'appendonly yes',
    'appendfsync everysec',
    'save ""',
    `maxmemory ${plan.maxmemoryMiB}mb`,
    'maxmemory-policy noeviction',
    `maxclients ${plan.connections}`,
    'logfile ""',
  ];
  return [
    'umask 077',
    `mkdir -p ${quote(data)} ${quote(join(dir, SOCKETS))}`,
    // The password comes from the environment through a builtin: never on a command line.
    `{ printf '%s\\n' ${settings.map(quote).join(' ')}; printf 'requirepass %s\\n' "$ADDON_PASSWORD"; } > ${quote(conf)}`,
    `exec ${REDIS_SERVER} ${quote(conf)}`,
  ].join('\n');
}

/** The environment of the server's command (read by the shell builtins above, never by the server). */
export function serverEnv(kind: AddonKind, c: AddonCredentials): Record<string, string> {
  return kind === 'postgres' ? { ADDON_ADMIN_PASSWORD: c.adminPassword! } : { ADDON_PASSWORD: c.password };
}

/** Whether the server accepts an authenticated connection now (Postgres: the platform's superuser; Redis: AUTH + PING). */
export async function accepts(kind: AddonKind, port: number, c: AddonCredentials): Promise<boolean> {
  if (kind === 'redis') return (await redisCommands(port, c, [['PING']]))?.[0] === 'PONG';
  let client: pg.Client | undefined;
  try {
    client = adminClient(port, c, 'postgres');
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client?.end().catch(() => {});
  }
}

/**
 * A pg client whose late errors (a connect timeout fires an 'error' event as well as rejecting
 * connect(); a server that goes away mid-session) are the caller's awaited rejection, never an
 * uncaught exception of the platform process.
 */
export function quietClient(config: pg.ClientConfig): pg.Client {
  // pg arms its connect timer before opening the socket; a port the socket refuses to open throws
  // there, and the timer later destroys a socket nobody listens on (an uncaught exception).
  const port = config.port ?? 5432;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`not a TCP port: ${port}`);
  const client = new pg.Client(config);
  client.on('error', () => {});
  return client;
}

export function adminClient(port: number, c: AddonCredentials, database: string) {
  return quietClient({
    host: '127.0.0.1',
    port,
    user: c.adminUser,
    password: c.adminPassword,
    database,
    connectionTimeoutMillis: 2000,
    statement_timeout: 30_000,
  });
}

/**
 * Sends commands to a Redis add-on after AUTH and answers their simple replies (null when it
 * could not). Enough for the platform's own needs (readiness, rotation); replies are bounded.
 */
export function redisCommands(port: number, c: AddonCredentials, commands: string[][]): Promise<string[] | null> {
  const encode = (args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    const done = (value: string[] | null) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(2000, () => done(null));
    socket.on('error', () => done(null));
    socket.on('connect', () => socket.write(encode(['AUTH', c.user, c.password]) + commands.map(encode).join('')));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (text.length > 64 * 1024) return done(null);
      const lines = text.split('\r\n').filter(Boolean);
      if (lines.length < commands.length + 1) return;
      if (lines[0] !== '+OK') return done(null);
      done(lines.slice(1, commands.length + 1).map((l) => l.replace(/^[+-]/, '')));
    });
    socket.on('close', () => done(null));
  });
}
