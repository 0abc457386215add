import type { Wired } from '../../platform/wiring.js';
import type { SshKeysRepository } from './ssh-keys.repository.js';
import { sshKeysRoutes } from './ssh-keys.routes.js';
import { SshKeysService } from './ssh-keys.service.js';

/** Users' SSH public keys (issue 34): registered over the API, read by the SSH gateway. */
export function wireSshKeys(deps: { repository: SshKeysRepository }) {
  const sshKeys = new SshKeysService(deps.repository);
  return { sshKeys, routes: [sshKeysRoutes(sshKeys)] } satisfies Wired;
}
