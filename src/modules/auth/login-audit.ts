import type { Db } from '../../platform/db/database.js';
import { currentAudit, type AuditActor } from '../../platform/audit/request-audit.js';

/**
 * Names the person on a password login's audit row, with the session it opened. The row is
 * written with the request's first write, and a login's first write is its failure counters,
 * made before the password is checked (when nobody is known yet): so the row, when written
 * already, is completed here; otherwise it is written later with these.
 */
export async function auditPasswordSignIn(db: Db, actor: AuditActor & { credentialId: string }, email: string) {
  const audit = currentAudit();
  if (!audit) return;
  const after = { method: 'password', email };
  audit.setActor(actor);
  Object.assign(audit.change, { resourceType: 'sessions', resourceId: actor.credentialId, after });
  if (audit.rowId === null) return;
  await db
    .updateTable('audit_log')
    .set({
      actor_user_id: actor.userId,
      actor_username: actor.username,
      credential_kind: actor.credentialKind,
      credential_id: actor.credentialId,
      resource_type: 'sessions',
      resource_id: actor.credentialId,
      after: JSON.stringify(after),
    })
    .where('id', '=', audit.rowId)
    .execute();
}
