// The metrics module's public surface: other modules and the composition root import only from here.
export * from './platform-metrics.js';
export * from './metrics.routes.js';
export * from './wire.js';
