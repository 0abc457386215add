// The registry module's public surface: other modules and the composition root import only from here.
export * from './registry.service.js';
export * from './registry.routes.js';
export { RegistryRepository } from './registry.repository.js';
export * from './wire.js';
