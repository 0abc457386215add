// The pipeline module's public surface: other modules and the composition root import only from here.
export * from './latest-records.js';
export * from './environment-pipeline.js';
// Moved down to src/platform/pipeline (shared by the stage modules); re-exported for existing importers.
export * from '../../platform/pipeline/index.js';
export * from './pipeline.service.js';
export * from './pipeline.routes.js';
export * from './wire.js';
