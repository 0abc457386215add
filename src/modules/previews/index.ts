// The previews module's public surface: other modules and the composition root import only from here.
export * from './previews.service.js';
export * from './previews.routes.js';
export * from './preview-statuses.js';
export { PreviewsRepository } from './previews.repository.js';
export * from './wire.js';
