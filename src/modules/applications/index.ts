// The applications module's public surface: other modules and the composition root import only from here.
export * from './applications.schemas.js';
export * from './pod-classes.js';
export * from './application-records.js';
export * from './applications.service.js';
export * from './applications.routes.js';
export { ApplicationsRepository } from './applications.repository.js';
export * from './wire.js';
