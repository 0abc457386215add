// The ssh-gateway module's public surface: the composition root imports only from here.
export { wireSshGateway } from './wire.js';
export { SshGateway, SSH_LIMITS } from './ssh-gateway.js';
