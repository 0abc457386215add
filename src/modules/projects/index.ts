// The projects module's public surface: other modules and the composition root import only from here.
export * from './projects.schemas.js';
export * from './projects.service.js';
export * from './projects.routes.js';
export { ProjectsRepository } from './projects.repository.js';
export * from './wire.js';
