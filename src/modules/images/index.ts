// The images module's public surface (HTTP over src/pipeline): other modules and the composition root import only from here.
export * from './images.schemas.js';
export * from './images.routes.js';
