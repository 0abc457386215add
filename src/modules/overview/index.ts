// The overview module's public surface: the composition root imports only from here.
export * from './overview.schemas.js';
export * from './overview.service.js';
export * from './overview.routes.js';
export * from './wire.js';
