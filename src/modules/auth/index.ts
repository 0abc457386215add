// The auth module's public surface: other modules and the composition root import only from here.
export * from './principal.js';
export * from './auth.hook.js';
export * from './auth.service.js';
export * from './auth.routes.js';
