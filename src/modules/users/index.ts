// The users module's public surface: other modules and the composition root import only from here.
export * from './users.repository.js';
export * from './users.service.js';
export * from './users.routes.js';
export * from './wire.js';
export * from './external-users.js';
