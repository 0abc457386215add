// The git-push module's public surface: the composition root imports only from here.
export * from './git-push.service.js';
export * from './git-push.routes.js';
export * from './wire.js';
