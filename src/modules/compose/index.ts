// The Compose import's public surface.
export { ComposeImportsRepository } from './compose-imports.repository.js';
export { ComposeService } from './compose.service.js';
export { parseComposeFile, MAX_COMPOSE_BYTES, MAX_COMPOSE_SERVICES } from './compose-file.js';
export * from './wire.js';
