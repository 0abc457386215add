// The add-ons module's public surface.
export { AddonsService } from './addons.service.js';
export { AddonsRepository } from './addons.repository.js';
export * from './wire.js';
