import type { AppContext } from '../../platform/context.js';
import { SigningKeys } from '../../platform/crypto/signing-key.js';
import type { Wired } from '../../platform/wiring.js';
import type { AuthService } from '../auth/index.js';
import type { RegistryRepository } from './registry.repository.js';
import { registryRoutes } from './registry.routes.js';
import { RegistryTokenService } from './registry.service.js';

/** The image registry's token service and the keys that sign its tokens. */
export function wireRegistry(deps: { ctx: AppContext; repository: RegistryRepository; auth: AuthService }) {
  const signingKeys = SigningKeys.forConfig(deps.ctx.config);
  const registryTokens = new RegistryTokenService(deps.ctx, deps.repository, signingKeys, deps.auth);
  return { signingKeys, registryTokens, routes: [registryRoutes(signingKeys, registryTokens)] } satisfies Wired;
}
