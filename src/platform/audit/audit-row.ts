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

/** Subqueries finding the organization a route's parameters (or body) name, first match wins. */
function organizationLookups(audit: RequestAudit, values: unknown[]): string[] {
  const { params, route, body } = audit.request;
  const bind = (v: string) => {
    values.push(v);
    return `$${values.length}`;
  };
  const viaApplication = (expr: string) =>
    `(SELECT p.organization_id FROM applications a JOIN projects p ON p.id = a.project_id WHERE a.id::text = ${expr})`;
  const lookups: string[] = [];
  const orgSlug = params.org_slug ?? params.workspace;
  if (orgSlug) lookups.push(`(SELECT id FROM organizations WHERE slug = ${bind(orgSlug)})`);
  if (params.application_id) lookups.push(viaApplication(bind(params.application_id)));
  const first = route.split('/')[2];
  if (params.id && (first === 'images' || first === 'releases' || first === 'deployments'))
    lookups.push(viaApplication(`(SELECT application_id::text FROM ${first} WHERE id::text = ${bind(params.id)})`));
  const fields = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  if (typeof fields.organization_id === 'string')
    lookups.push(`(SELECT id FROM organizations WHERE id::text = ${bind(fields.organization_id)})`);
  if (typeof fields.project_id === 'string')
    lookups.push(`(SELECT organization_id FROM projects WHERE id::text = ${bind(fields.project_id)})`);
  return lookups;
}

/** The INSERT of a request's audit row (plain SQL: it runs on the driver's connection, inside the change's transaction). */
export function auditInsert(audit: RequestAudit): { sql: string; values: unknown[] } {
  const { request, change } = audit;
  const actor = audit.actor;
  const resource = resourceOfRoute(request.route, request.params, request.method);
  const redactBody = CONFIGURATION_ROUTE.test(request.route) ? redactConfigurationBody : redactForAudit;
  const after = change.after !== undefined ? change.after : request.method === 'DELETE' ? null : redactBody(request.body ?? null);
  const values: unknown[] = [
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
  const organization = ['$1::uuid', ...organizationLookups(audit, values)].join(', ');
  return {
    sql: `INSERT INTO audit_log (organization_id, actor_user_id, actor_username, credential_kind, credential_id, action, resource_type,
      resource_id, client_address, request_id, peer_address, denied, before, after)
      VALUES (COALESCE(${organization}), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14::jsonb) RETURNING id`,
    values,
  };
}
