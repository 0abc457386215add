// The env-deploys module's public surface (HTTP over src/pipeline): other modules and the composition root import only from here.
export * from './env-deploys.routes.js';
