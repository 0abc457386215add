import type { Db } from '../../platform/db/database.js';
import type { Wired } from '../../platform/wiring.js';
import type { AuditRepository } from './audit.repository.js';
import { auditRoutes } from './audit.routes.js';
import { AuditService, type RequireOrganizationAdmin } from './audit.service.js';

/** Reading the audit log (organization admins); the HTTP app installs the hooks that write it. */
export function wireAudit(deps: { db: Db; repository: AuditRepository; requireOrganizationAdmin: RequireOrganizationAdmin }) {
  const audit = new AuditService(deps.db, deps.repository, deps.requireOrganizationAdmin);
  return { audit, routes: [auditRoutes(audit)] } satisfies Wired;
}
