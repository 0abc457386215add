import { CompiledQuery } from 'kysely';
import type { FastifyRequest } from 'fastify';
import type { Db } from '../../platform/db/database.js';
import { auditInsert } from '../../platform/audit/audit-row.js';
import { RequestAudit, type AuditActor } from '../../platform/audit/request-audit.js';

const NOBODY: AuditActor = { userId: null, username: null, credentialKind: 'none', credentialId: null };

/**
 * The audit row of a single sign-on step. Its routes are GETs (the browser is sent to them),
 * which the request audit leaves out, so they write their row themselves: a sign-in (actor the
 * user, method `oidc`, in the sign-in's transaction) or a refusal (with its status and reason).
 */
export async function auditSignIn(
  db: Db,
  request: FastifyRequest,
  entry: {
    actor?: AuditActor;
    issuer: string | null;
    status: number;
    reason?: string;
    newUser?: boolean;
    organizations?: string[];
    withdrawn?: string[];
  },
) {
  const audit = new RequestAudit(
    {
      requestId: String(request.id),
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0]!,
      params: (request.params ?? {}) as Record<string, string>,
      clientAddress: request.ip ?? null,
      peerAddress: request.socket?.remoteAddress ?? null,
      body: null,
    },
    () => entry.actor ?? NOBODY,
  );
  audit.denied = entry.status >= 400;
  Object.assign(audit.change, {
    resourceType: 'sessions',
    resourceId: entry.actor?.credentialId ?? null,
    after: {
      method: 'oidc',
      issuer: entry.issuer,
      status: entry.status,
      ...(entry.reason ? { reason: entry.reason.slice(0, 500) } : {}),
      ...(entry.newUser !== undefined ? { new_user: entry.newUser } : {}),
      ...(entry.organizations?.length ? { granted: entry.organizations } : {}),
      // Memberships the groups no longer grant (not `withdrawn`: the audit redacts fields containing `raw`).
      ...(entry.withdrawn?.length ? { lowered: entry.withdrawn } : {}),
    },
  });
  const { sql, values } = auditInsert(audit);
  await db.executeQuery(CompiledQuery.raw(sql, values));
}
