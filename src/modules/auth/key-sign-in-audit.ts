import { CompiledQuery } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/db/database.js';
import { auditInsert } from '../../platform/audit/audit-row.js';
import { RequestAudit } from '../../platform/audit/request-audit.js';

/**
 * The audit row of an API key's first use of the day: a key signs in wherever it is used (a
 * read, git push, the registry), and reads are not audited otherwise. One row per key per day
 * keeps "who signed in, how, from where" answerable without a row per request.
 */
export async function auditKeySignIn(db: Db, use: { userId: string; username: string; credentialId: string; address: string | null }) {
  const audit = new RequestAudit(
    {
      requestId: randomUUID(),
      method: 'USE',
      route: '/v1/auth/api-keys/:id',
      params: { id: use.credentialId },
      clientAddress: use.address,
      peerAddress: null,
      body: null,
    },
    () => ({ userId: use.userId, username: use.username, credentialKind: 'api_key', credentialId: use.credentialId }),
  );
  Object.assign(audit.change, {
    resourceType: 'sessions',
    resourceId: use.credentialId,
    after: { method: 'api_key', first_use_today: true },
  });
  const { sql, values } = auditInsert(audit);
  await db.executeQuery(CompiledQuery.raw(sql, values));
}
