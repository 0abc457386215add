// The env-deploys module's public surface (HTTP over src/pipeline): other modules and the composition root import only from here.
// Deploys and their records are Ancla-shaped routes (src/adapters/ancla/env-deploys.routes.ts) over these schemas; promotion stays here.
export * from './env-deploys.routes.js';
export * from './env-deploys.schemas.js';
