import { sql, type RawBuilder } from 'kysely';

/**
 * A timestamp as the API writes it (`iso()` in platform/http/schemas.ts: UTC, milliseconds, `Z`), written
 * by PostgreSQL. For the hot reads whose whole answer PostgreSQL writes as JSON text (issue 35): node then
 * neither parses the row's dates into `Date`s nor formats them back, nor serializes the answer again.
 * `MS` truncates to milliseconds, as node-postgres does when it parses a timestamp.
 */
export function isoText(column: string): RawBuilder<string> {
  return sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
