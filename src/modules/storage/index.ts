// The storage module's public surface (disk use, quota, garbage collection): the composition root imports only from here.
export * from './storage.schemas.js';
export * from './storage.service.js';
export * from './storage.routes.js';
export { StorageRepository } from './storage.repository.js';
export * from './wire.js';
