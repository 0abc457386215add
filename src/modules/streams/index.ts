// The streams module's public surface: other modules and the composition root import only from here.
export * from './streams.service.js';
export * from './streams.routes.js';
export * from './streams.schemas.js';
export { StreamsRepository } from './streams.repository.js';
export * from './wire.js';
