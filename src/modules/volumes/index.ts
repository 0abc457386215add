// The volumes module's public surface.
export { VolumesService } from './volumes.service.js';
export { VolumesRepository } from './volumes.repository.js';
export * from './wire.js';
