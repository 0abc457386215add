// The workspaces module's public surface: other modules and the composition root import only from here.
export * from './workspace-scope.js';
export * from './workspaces.schemas.js';
export * from './workspaces.service.js';
export * from './workspaces.routes.js';
export { WorkspacesRepository } from './workspaces.repository.js';
export * from './wire.js';
