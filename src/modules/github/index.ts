// The github module's public surface: other modules and the composition root import only from here.
export * from './github-hooks.service.js';
export * from './github.routes.js';
export * from './deployment-reports.js';
export * from './installations.service.js';
export * from './installations.routes.js';
export * from './wire.js';
