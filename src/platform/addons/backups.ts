import { join } from 'node:path';
import { postgresBinDir, quote, REPOSITORY, SOCKETS } from './servers.js';

/**
 * The shell commands of a Postgres add-on's backups, restores and drills. Each runs in a sandbox
 * of an add-on, as its own user (see AddonSupervisor.runTask): the platform never reads, copies
 * or removes a file of the repository itself, so nothing the server's user wrote there (a link,
 * a huge file) is ever followed or read by root. Tools: Debian's postgresql (pg_basebackup,
 * pg_verifybackup, pg_archivecleanup), see docs/addons.md for why not pgBackRest.
 */

const bin = (tool: string) => quote(join(postgresBinDir()!, tool));

/** A Postgres configuration value, single-quoted (postgresql.auto.conf syntax). */
const confValue = (v: string) => `'${v.replace(/'/g, "''")}'`;

/**
 * A base backup into `repo/base/<id>`, over the server's socket in the add-on's directory (plain format with its manifest and the WAL it needs, so it
 * restores alone; a `.part` name until complete). Prints `start_wal=` and `size=` lines.
 */
export function baseBackupCommand(dir: string, port: number, adminUser: string, id: string): string {
  const base = join(dir, REPOSITORY, 'base');
  const part = join(base, `${id}.part`);
  return [
    'set -e',
    'umask 077',
    `mkdir -p ${quote(base)}`,
    `rm -rf ${quote(part)}`,
    `${bin('pg_basebackup')} -h ${quote(join(dir, SOCKETS))} -p ${port} -U ${quote(adminUser)} -D ${quote(part)} -Fp -X stream -c fast --no-password`,
    `start=$(sed -n 's/^START WAL LOCATION: .*(file \\([0-9A-F]*\\))$/\\1/p' ${quote(join(part, 'backup_label'))})`,
    `mv ${quote(part)} ${quote(join(base, id))}`,
    'echo "start_wal=$start"',
    `echo "size=$(du -sb ${quote(join(base, id))} | cut -f1)"`,
  ].join('\n');
}

/** Parses `key=value` lines a command printed. */
export function keyValues(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/**
 * Removes expired base backups (and a half-written one a crash left) and the archived WAL older
 * than the oldest backup kept (pg_archivecleanup keeps that backup's first segment and later).
 */
export function pruneCommand(dir: string, removeIds: string[], oldestKeptStartWal: string | null): string {
  const base = join(dir, REPOSITORY, 'base');
  return [
    'set -e',
    ...removeIds.map((id) => `rm -rf ${quote(join(base, id))}`),
    `find ${quote(base)} -maxdepth 1 -name '*.part' -exec rm -rf {} +`,
    ...(oldestKeptStartWal && /^[0-9A-F]{24}$/.test(oldestKeptStartWal)
      ? [`${bin('pg_archivecleanup')} ${quote(join(dir, REPOSITORY, 'wal'))} ${oldestKeptStartWal}`]
      : []),
  ].join('\n');
}

/** Where a restore stops: a time, a named restore point, or the end of the base backup. */
export type RecoveryTarget = { time: Date } | { name: string } | { immediate: true };

function recoverySettings(target: RecoveryTarget, walDir: string): string[] {
  return [
    `restore_command = ${confValue(`cp ${quote(walDir)}/%f %p`)}`,
    'time' in target
      ? // Postgres takes no 'T' nor 'Z' here.
        `recovery_target_time = ${confValue(target.time.toISOString().replace('T', ' ').replace('Z', '+00'))}`
      : 'name' in target
        ? `recovery_target_name = ${confValue(target.name)}`
        : "recovery_target = 'immediate'",
    "recovery_target_action = 'promote'",
    // No connection until recovery has ended: "accepts connections" then means "restored".
    'hot_standby = off',
  ];
}

/** The settings a restore added, reset once the fork has been promoted. */
export const RECOVERY_SETTINGS = [
  'restore_command',
  'recovery_target_time',
  'recovery_target_name',
  'recovery_target',
  'recovery_target_action',
  'hot_standby',
];

/**
 * Lays down a fork's data from the source's repository (run as the SOURCE add-on's user, both
 * directories writable; the fork's directory is given to the fork's user before its server
 * starts): the base backup, the archived WAL beside it, and the recovery settings to `target`.
 */
export function restoreCommand(
  sourceDir: string,
  forkDir: string,
  backup: { id: string; startWal: string | null },
  target: RecoveryTarget,
): string {
  const data = join(forkDir, 'data');
  const wal = join(forkDir, 'restore-wal');
  const settings = recoverySettings(target, wal);
  return [
    'set -e',
    'umask 077',
    `rm -rf ${quote(data)} ${quote(wal)}`,
    `mkdir -p ${quote(wal)}`,
    'echo "step=copying the base backup"',
    `cp -a ${quote(join(sourceDir, REPOSITORY, 'base', backup.id))} ${quote(data)}`,
    // The end of the backup needs no archived WAL (the backup holds its own); a later target needs
    // the segments from the backup's first one on, and every timeline history. -type f: never a
    // link; a half-copied segment (.part) is not WAL.
    ...('immediate' in target
      ? []
      : [
          `cd ${quote(join(sourceDir, REPOSITORY, 'wal'))}`,
          `find . -maxdepth 1 -type f ! -name '*.part' | sed 's|^\\./||' | awk -v from=${quote(backup.startWal && /^[0-9A-F]{24}$/.test(backup.startWal) ? backup.startWal : '')} '/^[0-9A-F]+\\.history$/ || (/^[0-9A-F]+$/ && substr($0, 9) >= substr(from, 9))' | xargs -r cp -t ${quote(wal)}`,
        ]),
    `rm -f ${quote(join(data, 'backup_manifest'))}`,
    `printf '%s\\n' ${settings.map(quote).join(' ')} >> ${quote(join(data, 'postgresql.auto.conf'))}`,
    `touch ${quote(join(data, 'recovery.signal'))}`,
  ].join('\n');
}

/**
 * A restore drill, all inside the add-on's sandbox without any network: verifies the backup
 * against its manifest (pg_verifybackup: every file's size and checksum, and its WAL), restores
 * it into a scratch directory, starts a scratch server on a private socket, waits until it has
 * recovered, prints `table=<database>.<schema>.<table>=<rows>` per table, and stops it. Exit 3
 * with `damaged=` when the repository does not match its manifest.
 */
export function drillCommand(dir: string, backupId: string, adminUser: string, check?: DrillCheck, backupDir?: string): string {
  const backup = backupDir ?? join(dir, REPOSITORY, 'base', backupId);
  const scratch = join(dir, 'drill');
  const data = join(scratch, 'data');
  // As the superuser in the member's databases: only pg_catalog on the search path, so a function or operator
  // the member defined (public.format, ||) never runs in place of the built-in one (CVE-2018-1058).
  const psql = `PGOPTIONS='-c search_path=pg_catalog,pg_temp' ${bin('psql')} -X -h ${quote(scratch)} -U ${quote(adminUser)} -v ON_ERROR_STOP=1 -At`;
  const count =
    "SELECT 'table=' || current_database() || '.' || schemaname || '.' || tablename || '=' || " +
    "(xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', schemaname, tablename), false, true, '')))[1]::text " +
    "FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1";
  return [
    'umask 077',
    `rm -rf ${quote(scratch)}`,
    `if ! out=$(${bin('pg_verifybackup')} ${quote(backup)} 2>&1); then echo "damaged=$(printf '%s' "$out" | grep -m1 -i error || printf '%s' "$out" | tail -n1)"; exit 3; fi`,
    'set -e',
    `mkdir -p ${quote(scratch)}`,
    `cp -a ${quote(backup)} ${quote(data)}`,
    `printf 'local all all trust\\n' > ${quote(join(data, 'pg_hba.conf'))}`,
    `printf '%s\\n' ${recoverySettings({ immediate: true }, join(dir, REPOSITORY, 'wal'))
      .map(quote)
      .join(' ')} >> ${quote(join(data, 'postgresql.auto.conf'))}`,
    `touch ${quote(join(data, 'recovery.signal'))}`,
    `${bin('postgres')} -D ${quote(data)} -c listen_addresses= -c unix_socket_directories=${quote(scratch)} -c archive_mode=off` +
      ` -c shared_buffers=16MB -c max_connections=10 -c dynamic_shared_memory_type=mmap -c logging_collector=off > ${quote(join(scratch, 'log'))} 2>&1 &`,
    'pid=$!',
    'tries=0',
    `until ${psql} -d postgres -c 'SELECT 1' >/dev/null 2>&1; do`,
    `  if ! kill -0 $pid 2>/dev/null || [ $tries -gt 1200 ]; then echo "failed=$(grep -m1 -E 'FATAL|PANIC' ${quote(join(scratch, 'log'))} || tail -n1 ${quote(join(scratch, 'log'))})"; exit 4; fi`,
    '  tries=$((tries + 1)); sleep 0.1',
    'done',
    `for db in $(${psql} -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY 1"); do`,
    `  ${psql} -d "$db" -c ${quote(count)}`,
    'done',
    ...(check ? checkLines(scratch, check) : []),
    'kill -INT $pid',
    'wait $pid || true',
    `rm -rf ${quote(scratch)}`,
  ].join('\n');
}

/** A drill's user-supplied check: a query run on the restored copy as the application's user. */
export interface DrillCheck {
  query: string;
  user: string;
  database: string;
}

/** How long the check query may run on the scratch server before the drill fails. */
export const DRILL_CHECK_TIMEOUT_MS = 30_000;
const FIRST_VALUE_CHARS = 200;

/**
 * The check runs as the application's own role (not the superuser), in a read-only transaction
 * with a statement timeout, wrapped so the server answers one line: the row count and the first
 * row's first value (hex, at most 200 characters), whatever the query returns. An error (or the
 * timeout) prints `check_failed=` and stops the scratch server: exit 5. The copy is a scratch one
 * inside the sandbox, so even a query that escaped the read-only transaction changes no real data,
 * and the whole psql is killed past the timeout whatever its text set.
 */
function checkLines(scratch: string, check: DrillCheck): string[] {
  const wrapped =
    `SELECT count(*) OVER (), check_query.v IS NULL, encode(convert_to(left(check_query.v::text, ${FIRST_VALUE_CHARS}), 'UTF8'), 'hex') ` +
    `FROM (${check.query.trim().replace(/;+\s*$/, '')}\n) AS check_query(v) LIMIT 1`;
  const psql =
    `env PGOPTIONS=${quote(`-c default_transaction_read_only=on -c statement_timeout=${DRILL_CHECK_TIMEOUT_MS}`)} ` +
    `${bin('psql')} -X -h ${quote(scratch)} -U ${quote(check.user)} -d ${quote(check.database)} -v ON_ERROR_STOP=1 -At -F ' '`;
  const seconds = Math.ceil(DRILL_CHECK_TIMEOUT_MS / 1000) + 5;
  return [
    // `timeout` bounds it whatever the text does (psql -c runs several statements; one could undo the
    // settings). psql's own status travels as the last line: the pipe's status would be head's.
    `out=$({ timeout -s KILL ${seconds} ${psql} -c ${quote(wrapped)} 2>&1; echo "psql_exit=$?"; } | head -c 4096) || true`,
    `status=$(printf '%s\\n' "$out" | sed -n 's/^psql_exit=//p' | tail -n 1)`,
    `out=$(printf '%s\\n' "$out" | grep -v '^psql_exit=' || true)`,
    `if [ "$status" != 0 ] || { [ -n "$out" ] && ! printf '%s\\n' "$out" | grep -qxE '[0-9]+ [tf] [0-9a-f]*'; }; then`,
    `  msg=$(printf '%s\\n' "$out" | grep -m1 -E 'ERROR|FATAL' | head -c 500)`,
    `  [ -n "$msg" ] || msg="the check query did not finish within ${seconds} s"`,
    `  echo "check_failed=$msg"`,
    `  kill -INT $pid; wait $pid || true; rm -rf ${quote(scratch)}; exit 5`,
    'fi',
    'echo "check=$out"',
  ];
}

/** The check's outcome from a drill's output: rows and the first value (null: no row or SQL NULL). */
export function drillCheckResult(stdout: string): { rows: number; first_value: string | null } | null {
  const line = stdout.split('\n').find((l) => l.startsWith('check='));
  if (line === undefined) return null;
  const m = /^(\d+) ([tf]) ([0-9a-f]*)$/.exec(line.slice('check='.length).trim());
  if (!m) return { rows: 0, first_value: null };
  return { rows: Number(m[1]), first_value: m[2] === 't' ? null : Buffer.from(m[3]!, 'hex').toString('utf8') };
}

/** Rows per table from a drill's output (bounded: at most 1000 tables kept). */
export function drillTables(stdout: string): Record<string, number> {
  const tables: Record<string, number> = {};
  for (const line of stdout.split('\n')) {
    const m = /^table=(.+)=(\d+)$/.exec(line.trim());
    if (m && Object.keys(tables).length < 1000) tables[m[1]!] = Number(m[2]);
  }
  return tables;
}

// --- S3-compatible storage: the sandbox streams, the platform uploads (the sandbox keeps no network) ---

/** An archived WAL file's name: a segment, a timeline history, or a backup history file. */
export const WAL_NAME = /^[0-9A-F]{24}(\.[0-9A-F]{8}\.backup)?$|^[0-9A-F]{8}\.history$/;

/** Writes a completed base backup (its directory, manifest included) as a tar on standard output. */
export function baseBackupTarCommand(dir: string, id: string): string {
  return `exec tar -C ${quote(join(dir, REPOSITORY, 'base', id))} -cf - .`;
}

/** Lists the archived WAL files (`<name> <bytes>` lines): regular files only, no half-copied `.part`. */
export function walListCommand(dir: string): string {
  const wal = join(dir, REPOSITORY, 'wal');
  return `[ -d ${quote(wal)} ] || exit 0\nexec find ${quote(wal)} -maxdepth 1 -type f ! -name '*.part' -printf '%f %s\\n'`;
}

/** Parses walListCommand's output: valid names only, each with its size. */
export function walListed(stdout: string): Array<{ name: string; size: number }> {
  return stdout
    .split('\n')
    .map((line) => /^(\S+) (\d+)$/.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null && WAL_NAME.test(m[1]!))
    .map((m) => ({ name: m[1]!, size: Number(m[2]) }));
}

/** Writes the named archived WAL files as a tar on standard output (names checked: WAL_NAME). */
export function walTarCommand(dir: string, names: string[]): string {
  return `exec tar -C ${quote(join(dir, REPOSITORY, 'wal'))} -cf - -- ${names.filter((n) => WAL_NAME.test(n)).join(' ')}`;
}

/** Removes archived WAL files the object store holds (never a name outside WAL_NAME). */
export function walTrimCommand(dir: string, names: string[]): string {
  const valid = names.filter((n) => WAL_NAME.test(n));
  return valid.length ? `cd ${quote(join(dir, REPOSITORY, 'wal'))} && rm -f -- ${valid.join(' ')}` : 'true';
}

/** Empties `target` and extracts the tar read on standard input into it (as the task's user). */
/**
 * Moves the WAL extracted from the object store (`restore-wal-store`) into a fork's `restore-wal`,
 * beside what the local repository gave (segments shipped to the store are trimmed locally): a
 * local copy wins, so nothing already laid is replaced. Runs as the source's user in its sandbox.
 */
export function mergeStoreWalCommand(forkDir: string): string {
  const from = join(forkDir, 'restore-wal-store');
  const into = join(forkDir, 'restore-wal');
  return [
    'set -e',
    `mkdir -p ${quote(into)}`,
    `cd ${quote(from)}`,
    `for f in *; do if [ -f "$f" ] && [ ! -L "$f" ] && [ ! -e ${quote(into)}/"$f" ]; then mv "$f" ${quote(into)}/; fi; done`,
    `cd / && rm -rf ${quote(from)}`,
  ].join('\n');
}

export function extractCommand(target: string): string {
  return [
    'set -e',
    'umask 077',
    `rm -rf ${quote(target)}`,
    `mkdir -p ${quote(target)}`,
    `exec tar -C ${quote(target)} -xf - --no-same-owner`,
  ].join('\n');
}

/**
 * After a fork's base backup (in `data`) and WAL (in `restore-wal`) were extracted from the object
 * store: the recovery settings to `target`, as restoreCommand writes them from the local repository.
 */
export function recoverySettingsCommand(forkDir: string, target: RecoveryTarget): string {
  const data = join(forkDir, 'data');
  return [
    'set -e',
    'umask 077',
    `mkdir -p ${quote(join(forkDir, 'restore-wal'))}`,
    `rm -f ${quote(join(data, 'backup_manifest'))}`,
    `printf '%s\\n' ${recoverySettings(target, join(forkDir, 'restore-wal'))
      .map(quote)
      .join(' ')} >> ${quote(join(data, 'postgresql.auto.conf'))}`,
    `touch ${quote(join(data, 'recovery.signal'))}`,
  ].join('\n');
}

/**
 * Copies the source's locally archived WAL a restore from `startWal` needs into the fork's
 * `restore-wal`, beside what the store gave (a copy already there wins). Run as the source's user.
 */
export function localWalCommand(sourceDir: string, forkDir: string, startWal: string | null): string {
  const from = startWal && /^[0-9A-F]{24}$/.test(startWal) ? startWal : '';
  const into = join(forkDir, 'restore-wal');
  return [
    'set -e',
    `mkdir -p ${quote(into)}`,
    `[ -d ${quote(join(sourceDir, REPOSITORY, 'wal'))} ] || exit 0`,
    `cd ${quote(join(sourceDir, REPOSITORY, 'wal'))}`,
    // -type f: never a link; a half-copied segment (.part) is not WAL.
    `find . -maxdepth 1 -type f ! -name '*.part' | sed 's|^\\./||' | awk -v from=${quote(from)} '/^[0-9A-F]+\\.history$/ || (/^[0-9A-F]+$/ && length($0) == 24 && substr($0, 9) >= substr(from, 9))' |`,
    `  while IFS= read -r f; do [ -e ${quote(into)}/"$f" ] || cp "$f" ${quote(into)}/; done`,
  ].join('\n');
}

/** The archived WAL a restore from `startWal` needs: every timeline history, and the segments from that one on. */
export function walNeeded(names: string[], startWal: string | null): string[] {
  const from = startWal && /^[0-9A-F]{24}$/.test(startWal) ? startWal.slice(8) : '';
  return names.filter((n) => /^[0-9A-F]{8}\.history$/.test(n) || (/^[0-9A-F]{24}$/.test(n) && n.slice(8) >= from)).sort();
}
