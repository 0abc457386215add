// The guards module's public surface: other modules and the composition root import only from here.
export * from './guard-watcher.js';
export * from './guards.service.js';
export * from './guards.routes.js';
export { GuardsRepository } from './guards.repository.js';
export * from './wire.js';
