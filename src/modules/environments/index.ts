// The environments module's public surface: other modules and the composition root import only from here.
export * from './process-settings.js';
// Moved down to src/platform/access (applications, images and releases check it too); re-exported.
export * from '../../platform/access/environment-protection.js';
export * from './retirement.js';
export * from './environment-records.js';
export * from './environments.service.js';
export { EnvironmentsRepository } from './environments.repository.js';
export * from './environments.schemas.js';
export * from './wire.js';
