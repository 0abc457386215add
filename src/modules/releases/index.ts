// The releases module's public surface: other modules and the composition root import only from here.
export * from './release-freezer.js';
export * from './promotion.js';
export * from './releases.service.js';
export * from './releases.routes.js';
export { ReleasesRepository } from './releases.repository.js';
export * from './wire.js';
