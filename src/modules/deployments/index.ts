// The deployments module's public surface: other modules and the composition root import only from here.
export * from './deployments.repository.js';
export { OneOffRunsRepository } from './one-off-runs.repository.js';
export * from './deploy-chain.js';
export * from './deployments.jobs.js';
export * from './deployments.service.js';
export * from './deployments.routes.js';
export * from './one-off-runs.service.js';
export * from './one-off-runs.routes.js';
export * from './one-off-runs.schemas.js';
export * from './environment-choice.js';
export { GuardSettingsSchema } from './deployments.schemas.js';
export * from './wire.js';
