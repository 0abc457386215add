// The images module's public surface: other modules and the composition root import only from here.
export * from './images.schemas.js';
export * from './image-records.js';
export * from './images.service.js';
export * from './images.routes.js';
export { ImagesRepository } from './images.repository.js';
export { applicationArtifactsDir, artifactDir } from './build-runner.js';
export * from './wire.js';
