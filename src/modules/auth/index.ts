// The auth module's public surface: other modules and the composition root import only from here.
// The request guards live in src/platform/http (every module uses them); re-exported here.
export * from '../../platform/http/principal.js';
export * from './auth.hook.js';
export * from './auth.service.js';
export * from './auth.routes.js';
export { AuthRepository } from './auth.repository.js';
export { loginPasswordChecks } from './login-checks.js';
export * from './wire.js';
export * from './sessions.js';
