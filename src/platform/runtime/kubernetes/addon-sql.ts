/**
 * Shell scripts run in a CloudNativePG instance pod (`postgres` container) through `exec`: the
 * platform never connects to an add-on on Kubernetes (it does not reach the cluster's network). In
 * the pod, `psql` without a host reaches the local server as `postgres` (CloudNativePG sets PGHOST
 * to its socket directory and maps that user by peer). Secrets and names arrive on standard input.
 * Their output is the local drill's (src/platform/addons/backups.ts), parsed by the same functions.
 */
import { DRILL_CHECK_TIMEOUT_MS } from '../../addons/backups.js';

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const FIRST_VALUE_CHARS = 200;

/**
 * psql as the pod's superuser in the member's databases: only pg_catalog on the search path, so a function or
 * operator the member defined (public.format, ||) never runs in place of the built-in one (CVE-2018-1058).
 */
const SUPERUSER_PSQL = "PGOPTIONS='-c search_path=pg_catalog,pg_temp' psql -X -v ON_ERROR_STOP=1";

const EVERY_DATABASE = 'SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY 1';

const COUNT_ROWS =
  "SELECT 'table=' || current_database() || '.' || schemaname || '.' || tablename || '=' || " +
  "(xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', schemaname, tablename), false, true, '')))[1]::text " +
  "FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1";

/**
 * Rows per table of every database of the restored copy (`table=db.schema.table=N`), as the local
 * drill counts them: a member may keep tables in `postgres` or in a database of their own beside
 * the add-on's. Then, with a check, the check query
 * as the application's role over TCP with its password (first line of standard input), in a
 * read-only transaction with a statement timeout, bounded by `timeout` whatever its text sets:
 * `check=<rows> <null?> <hex>` or `check_failed=<message>` (exit 5).
 */
export function drillScript(database: string, check: { query: string; user: string } | null): string {
  const lines = [
    'set -e',
    `dbs=$(${SUPERUSER_PSQL} -At -d postgres -c ${quote(EVERY_DATABASE)})`,
    // One name a line (a name may hold spaces); a failed count fails the drill (set -e in the subshell, the pipe's status).
    `printf '%s\\n' "$dbs" | while IFS= read -r db; do [ -n "$db" ] || continue; ${SUPERUSER_PSQL} -At -d "$db" -c ${quote(COUNT_ROWS)}; done`,
  ];
  if (!check) return lines.join('\n');
  const wrapped =
    `SELECT count(*) OVER (), check_query.v IS NULL, encode(convert_to(left(check_query.v::text, ${FIRST_VALUE_CHARS}), 'UTF8'), 'hex') ` +
    `FROM (${check.query.trim().replace(/;+\s*$/, '')}\n) AS check_query(v) LIMIT 1`;
  const seconds = Math.ceil(DRILL_CHECK_TIMEOUT_MS / 1000) + 5;
  const asApp =
    `env PGOPTIONS=${quote(`-c default_transaction_read_only=on -c statement_timeout=${DRILL_CHECK_TIMEOUT_MS}`)} ` +
    `psql -X -h localhost -U ${quote(check.user)} -d ${quote(database)} -v ON_ERROR_STOP=1 -At -F ' '`;
  lines.push(
    'set +e',
    'IFS= read -r PGPASSWORD; export PGPASSWORD',
    `out=$({ timeout -s KILL ${seconds} ${asApp} -c ${quote(wrapped)} 2>&1; echo "psql_exit=$?"; } | head -c 4096)`,
    `status=$(printf '%s\\n' "$out" | sed -n 's/^psql_exit=//p' | tail -n 1)`,
    `out=$(printf '%s\\n' "$out" | grep -v '^psql_exit=')`,
    `if [ "$status" != 0 ] || { [ -n "$out" ] && ! printf '%s\\n' "$out" | grep -qxE '[0-9]+ [tf] [0-9a-f]*'; }; then`,
    `  msg=$(printf '%s\\n' "$out" | grep -m1 -E 'ERROR|FATAL' | head -c 500)`,
    `  [ -n "$msg" ] || msg="the check query did not finish within ${seconds} s"`,
    '  echo "check_failed=$msg"; exit 5',
    'fi',
    'echo "check=$out"',
  );
  return lines.join('\n');
}

/** `pg_create_restore_point(<first line of standard input>)` on the primary: `lsn=<lsn>`. */
export function restorePointScript(): string {
  return [
    'set -e',
    'IFS= read -r name',
    // psql interpolates :'name' (quoted as a literal) in what it reads, not in -c.
    `lsn=$(printf '%s\\n' ${quote("SELECT pg_create_restore_point(:'name')::text;")} | ${SUPERUSER_PSQL} -At -d postgres -v name="$name")`,
    'echo "lsn=$lsn"',
  ].join('\n');
}

/**
 * Makes everything the primary committed until now reach the object store before a restore to a
 * time or a restore point (CloudNativePG archives a segment only once it is full, or after its
 * `archive_timeout`, 5 minutes by default: a recent target would otherwise be unreachable). A
 * commit (a recovery to a time stops at the first commit after it), a WAL switch, then waits until
 * the archiver (barman-cloud-wal-archive) has passed the switched segment (a segment, not a backup's
 * or a timeline's history file, whose name sorts after it), for at most `seconds`:
 * `archived=<segment>`, or `not_archived=<last failed segment>` (exit 6).
 */
export function archiveNowScript(seconds: number): string {
  const psql = `${SUPERUSER_PSQL} -At -d postgres`;
  return [
    'set -e',
    `${psql} -c 'SELECT txid_current()' >/dev/null`,
    `wal=$(${psql} -c 'SELECT pg_walfile_name(pg_switch_wal())')`,
    `case "$wal" in *[!0-9A-F]*|'') echo "not_archived=no segment name: $wal"; exit 6;; esac`,
    `tries=$(( ${Math.max(1, Math.round(seconds))} * 5 ))`,
    `until [ "$(${psql} -c "SELECT coalesce(length(last_archived_wal) = 24 AND substr(last_archived_wal, 9) >= substr('$wal', 9), false) FROM pg_stat_archiver")" = t ]; do`,
    `  tries=$((tries - 1)); if [ $tries -le 0 ]; then echo "not_archived=$(${psql} -c 'SELECT coalesce(last_failed_wal, $$none$$) FROM pg_stat_archiver')"; exit 6; fi`,
    '  sleep 0.2',
    'done',
    'echo "archived=$wal"',
  ].join('\n');
}
