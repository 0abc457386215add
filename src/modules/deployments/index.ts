// The deployments module's public surface (HTTP over src/pipeline): other modules and the composition root import only from here.
export * from './deployments.routes.js';
export * from './one-off-runs.routes.js';
export * from './one-off-runs.schemas.js';
export { GuardSettingsSchema } from './deployments.schemas.js';
export * from './application-delete.route.js';
