import type { Db } from './database.js';
import { sql } from 'kysely';

/** Predefined roles whose members reach the database host itself (its files, its programs). */
const HOST_REACHING_ROLES = ['pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program'] as const;

export interface DatabaseRolePowers {
  role: string;
  /** Powers that reach the database host or every database: the start refuses them unless allowed. */
  hostReaching: string[];
  /** Powers beyond owning Slipway's database that reach no host: the start warns. */
  excess: string[];
}

/**
 * What the role the platform connects as may do beyond owning its database (issue 27): a
 * password that leaks (a log, a backup, a tenant reaching the socket) is worth exactly this.
 */
export async function databaseRolePowers(db: Db): Promise<DatabaseRolePowers> {
  const { rows } = await sql<{
    role: string;
    rolsuper: boolean;
    rolcreaterole: boolean;
    rolcreatedb: boolean;
    rolreplication: boolean;
    rolbypassrls: boolean;
    version: number;
    member_of: string[];
  }>`
    select current_user as role, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
           current_setting('server_version_num')::int as version,
           array(select r from unnest(${sql.val([...HOST_REACHING_ROLES])}::text[]) r
                  where pg_has_role(current_user, r, 'MEMBER')) as member_of
      from pg_roles where rolname = current_user`.execute(db);
  const r = rows[0]!;
  const hostReaching: string[] = [];
  const excess: string[] = [];
  if (r.rolsuper)
    hostReaching.push('is a superuser (COPY … FROM PROGRAM runs commands on the database host, pg_read_file reads its files)');
  for (const role of r.member_of) hostReaching.push(`is a member of ${role}`);
  // Before PostgreSQL 16, CREATEROLE may grant itself any non-superuser role, pg_execute_server_program included.
  if (r.rolcreaterole && r.version < 160000)
    hostReaching.push('has CREATEROLE on PostgreSQL older than 16 (it can grant itself pg_execute_server_program)');
  else if (r.rolcreaterole) excess.push('CREATEROLE');
  if (r.rolcreatedb) excess.push('CREATEDB');
  if (r.rolreplication) excess.push('REPLICATION');
  if (r.rolbypassrls) excess.push('BYPASSRLS');
  return { role: r.role, hostReaching, excess };
}

/** The start's sentence about a role that reaches the host; `allowed`: DATABASE_ALLOW_SUPERUSER=true. */
export function hostReachingRoleMessage(powers: DatabaseRolePowers, allowed: boolean): string {
  const risk =
    `DATABASE_URL connects as role "${powers.role}", which ${powers.hostReaching.join('; ')}: ` +
    'whoever learns its password can run commands and read files on the database host. ' +
    'Connect as a role that owns only Slipway\'s database (NOSUPERUSER NOCREATEROLE, no pg_*_server_* membership; docs/operations.md "Database role")';
  return allowed
    ? `warning: ${risk}. Started anyway because DATABASE_ALLOW_SUPERUSER=true.`
    : `${risk}, or set DATABASE_ALLOW_SUPERUSER=true to accept the risk.`;
}
