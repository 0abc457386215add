// The pipeline module's public surface: other modules and the composition root import only from here.
export * from './build-records.js';
export * from './latest-records.js';
export * from './production-environment.js';
export * from './record-log.js';
export * from './pipeline.service.js';
export * from './pipeline.routes.js';
