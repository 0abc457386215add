import { SshGateway, type SshGatewayDeps } from './ssh-gateway.js';

/** The SSH gateway (issues 29 and 34): built only when SSH_PORT is set; started and stopped by src/lifecycle.ts. */
export function wireSshGateway(deps: SshGatewayDeps) {
  return { sshGateway: deps.config.SSH_PORT ? new SshGateway(deps) : null };
}
