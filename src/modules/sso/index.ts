// The sso module's public surface: the composition root imports only from here.
export * from './wire.js';
export * from './sso.service.js';
export { SsoRepository } from './sso.repository.js';
