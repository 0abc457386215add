// The teams module's public surface: other modules and the composition root import only from here.
export * from './teams.service.js';
export * from './teams.schemas.js';
export { TeamsRepository } from './teams.repository.js';
export * from './wire.js';
