import { sql, type RawBuilder } from 'kysely';
import { redactConfigurationBody, redactForAudit } from './redact.js';

/** Routes that write configuration variables: every text in their body may be a secret. */
const CONFIGURATION_ROUTE = /\/configurations\/|\/config(\/|$)/;
import type { RequestAudit } from './request-audit.js';

/**
 * The resource a route addresses: its last `noun/:param` pair, or the collection a POST adds to
 * (`POST …/:org_slug/webhooks`); a trailing singular verb (`/scale`, `/redeliver`) or, for other
 * methods, any trailing word (`PATCH …/:application_id/settings`) acts on the resource before it.
 */
export function resourceOfRoute(route: string, params: Record<string, string>, method = 'POST'): { type: string; id: string | null } {
  const segments = route
    .replace(/^\/v1\//, '')
    .split('/')
    .filter(Boolean);
  let type = segments[0] ?? 'api';
  let id: string | null = null;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.startsWith(':')) {
      id = params[segment.slice(1)] ?? null;
      continue;
    }
    // A trailing verb (`/scale`, `/deploy`, `/redeliver`) acts on the resource before it; a plural adds to a collection.
    const trailingVerb =
      i === segments.length - 1 && i > 0 && segments[i - 1]!.startsWith(':') && (method !== 'POST' || !segment.endsWith('s'));
    if (trailingVerb) break;
    type = segment;
    id = null;
  }
  return { type, id };
}

/**
 * How a statement is written: as text with `$n` parameters (the auditing driver's own INSERT) or
 * as a Kysely fragment (the audit row folded into a change's statement, audited-statement.ts).
 */
interface Writer<T> {
  param(value: unknown): T;
  raw(text: string): T;
  join(parts: T[]): T;
}

/** Subqueries finding the organization a route's parameters (or body) name, first match wins. */
function organizationLookups<T>(audit: RequestAudit, w: Writer<T>): T[] {
  const { params, route, body } = audit.request;
  const viaApplication = (expr: T) =>
    w.join([
      w.raw('(SELECT p.organization_id FROM applications a JOIN projects p ON p.id = a.project_id WHERE a.id::text = '),
      expr,
      w.raw(')'),
    ]);
  const lookups: T[] = [];
  const orgSlug = params.org_slug ?? params.workspace;
  if (orgSlug) lookups.push(w.join([w.raw('(SELECT id FROM organizations WHERE slug = '), w.param(orgSlug), w.raw(')')]));
  if (params.application_id) lookups.push(viaApplication(w.param(params.application_id)));
  const first = route.split('/')[2];
  if (params.id && (first === 'images' || first === 'releases' || first === 'deployments'))
    lookups.push(
      viaApplication(w.join([w.raw(`(SELECT application_id::text FROM ${first} WHERE id::text = `), w.param(params.id), w.raw(')')])),
    );
  const fields = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  if (typeof fields.organization_id === 'string')
    lookups.push(w.join([w.raw('(SELECT id FROM organizations WHERE id::text = '), w.param(fields.organization_id), w.raw(')')]));
  if (typeof fields.project_id === 'string')
    lookups.push(w.join([w.raw('(SELECT organization_id FROM projects WHERE id::text = '), w.param(fields.project_id), w.raw(')')]));
  return lookups;
}

const AUDIT_COLUMNS = `organization_id, actor_user_id, actor_username, credential_kind, credential_id, action, resource_type,
      resource_id, client_address, request_id, peer_address, denied, before, after`;
/** Each column's type after the organization, for an INSERT … SELECT (whose parameters take no type from the columns). */
const AUDIT_TYPES = ['uuid', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'boolean', 'jsonb', 'jsonb'];

/** The row's values: what the request did, by whom, on what (secrets redacted), the organization first. */
function auditValues(audit: RequestAudit): unknown[] {
  const { request, change } = audit;
  const actor = audit.actor;
  const resource = resourceOfRoute(request.route, request.params, request.method);
  const redactBody = CONFIGURATION_ROUTE.test(request.route) ? redactConfigurationBody : redactForAudit;
  const after = change.after !== undefined ? change.after : request.method === 'DELETE' ? null : redactBody(request.body ?? null);
  return [
    change.organizationId ?? null,
    actor.userId,
    actor.username,
    actor.credentialKind,
    actor.credentialId,
    `${request.method} ${request.route}`,
    change.resourceType ?? resource.type,
    change.resourceId ?? resource.id,
    request.clientAddress,
    request.requestId,
    request.peerAddress,
    audit.denied,
    change.before == null ? null : JSON.stringify(redactForAudit(change.before)),
    after == null ? null : JSON.stringify(change.after !== undefined ? redactForAudit(after) : after),
  ];
}

/** The INSERT of a request's audit row (plain SQL: it runs on the driver's connection, inside the change's transaction). */
export function auditInsert(audit: RequestAudit): { sql: string; values: unknown[] } {
  const values = auditValues(audit);
  const text: Writer<string> = {
    param: (value) => `$${values.push(value)}`,
    raw: (t) => t,
    join: (parts) => parts.join(''),
  };
  const organization = ['$1::uuid', ...organizationLookups(audit, text)].join(', ');
  return {
    sql: `INSERT INTO audit_log (${AUDIT_COLUMNS})
      VALUES (COALESCE(${organization}), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14::jsonb) RETURNING id`,
    values,
  };
}

/**
 * The same row as a fragment of a change's own statement (a CTE, audited-statement.ts): written
 * only `when` the change changed something, so a write that matched nothing leaves no row.
 */
export function auditInsertWhen(audit: RequestAudit, when: RawBuilder<unknown>): RawBuilder<{ id: number }> {
  const [organizationId, ...rest] = auditValues(audit);
  const fragment: Writer<RawBuilder<unknown>> = {
    param: (value) => sql`${value}`,
    raw: (t) => sql.raw(t),
    join: (parts) => sql.join(parts, sql``),
  };
  const organization = sql.join([sql`${organizationId}::uuid`, ...organizationLookups(audit, fragment)]);
  const typed = rest.map((value, i) => sql`${value}::${sql.raw(AUDIT_TYPES[i]!)}`);
  return sql<{ id: number }>`INSERT INTO audit_log (${sql.raw(AUDIT_COLUMNS)})
      SELECT COALESCE(${organization}), ${sql.join(typed)} WHERE ${when} RETURNING id`;
}
