// The health module's public surface: other modules and the composition root import only from here.
export * from './health.routes.js';
export * from './wire.js';
