// The ssh-keys module's public surface: the composition root imports only from here.
export { wireSshKeys } from './wire.js';
export { SshKeysRepository } from './ssh-keys.repository.js';
export type { SshKeysService } from './ssh-keys.service.js';
export { fingerprintOf } from './ssh-key-format.js';
