import type { Db } from '../../platform/db/database.js';
import { serviceScopeChain } from './scope-chain.js';
import type { ConfigurationsService, ResolvedVariable } from './configurations.service.js';

/**
 * The configuration a service builds and runs with in an environment: organization →
 * team (when the project has one) → project → environment → application, a lower scope
 * overriding a higher one. Plain values: for builds and frozen releases only, never responses.
 */
export async function resolveServiceConfig(
  db: Db,
  configService: ConfigurationsService,
  applicationId: string,
  environmentId: string,
): Promise<ResolvedVariable[]> {
  return configService.resolve(await serviceScopeChain(db, applicationId, environmentId));
}
