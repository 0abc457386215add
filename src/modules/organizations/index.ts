// The organizations module's public surface: other modules and the composition root import only from here.
export * from './access.js';
export * from './organization-scope.js';
export * from './organizations.schemas.js';
export * from './pipeline-limits.js';
export * from './organizations.service.js';
export * from './organizations.routes.js';
export { OrganizationsRepository } from './organizations.repository.js';
export * from './wire.js';
export * from './granted-roles.js';
export { mailInvitations } from './invitation-mail.js';
