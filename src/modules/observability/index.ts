// The observability module's public surface: other modules and the composition root import only from here.
export * from './metrics-sampler.js';
export * from './observability.service.js';
export * from './observability.routes.js';
export * from './wire.js';
