// The configurations module's public surface: other modules and the composition root import only from here.
export * from './configurations.schemas.js';
export * from './layering.js';
export * from './scope-chain.js';
export * from './scoped-config.js';
export type { ScopeRef } from './configurations.repository.js';
export * from './scope-variable-records.js';
export * from './configurations.service.js';
export * from './configurations.routes.js';
export { ConfigurationsRepository } from './configurations.repository.js';
export * from './wire.js';
export { parseDotenv } from './dotenv.js';
