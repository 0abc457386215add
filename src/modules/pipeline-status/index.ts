// The pipeline-status module's public surface (HTTP over src/pipeline): other modules and the composition root import only from here.
export * from './pipeline.routes.js';
export { PipelineMetrics } from './pipeline.schemas.js';
