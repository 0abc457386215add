// The audit module's public surface: reading the audit log, and the hooks that scope each changing request.
export { AuditService, type RequireOrganizationAdmin } from './audit.service.js';
export { auditRoutes } from './audit.routes.js';
export { installAuditHooks } from './audit.hooks.js';
export { AuditRepository } from './audit.repository.js';
export * from './wire.js';
