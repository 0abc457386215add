// The environments module's public surface: other modules and the composition root import only from here.
export * from './process-settings.js';
export * from './protection.js';
export * from './env-deploys.service.js';
export * from './scope-chain.js';
export * from './retirement.js';
export * from './service-pipeline.js';
export * from './env-deploys.routes.js';
export * from './environments.routes.js';
