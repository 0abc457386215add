import type { Db } from '../../platform/db/database.js';
import { environmentTrust } from '../../platform/environments/index.js';
import { serviceScopeChain } from './scope-chain.js';
import type { ConfigurationsService, ResolvedVariable } from './configurations.service.js';

/**
 * The configuration a service builds and runs with in an environment: organization →
 * team (when the project has one) → project → environment → application, a lower scope
 * overriding a higher one. Plain values: for builds and frozen releases only, never responses.
 * In the preview of a pull request from a fork, only variables marked `previews` take part: every
 * build, release and promotion (on either runtime) resolves through here, so the rule holds everywhere.
 */
export async function resolveServiceConfig(
  db: Db,
  configService: ConfigurationsService,
  applicationId: string,
  environmentId: string,
): Promise<ResolvedVariable[]> {
  const trust = await environmentTrust(db, environmentId);
  const resolved = await configService.resolve(await serviceScopeChain(db, applicationId, environmentId), {
    markedForPreviewsOnly: trust.configuration === 'marked_for_previews_only',
  });
  // Attached add-ons' URLs (secrets) come last and win: attaching is the explicit, narrower choice.
  const attached = await configService.attachedAddons(applicationId, environmentId);
  if (attached.length === 0) return resolved;
  const names = new Set(attached.map((a) => a.name));
  return [
    ...resolved.filter((v) => !names.has(v.name)),
    ...attached.map((a) => ({ name: a.name, value: a.value, secret: true, buildtime: false, scope: 'addon' as const, scopeId: a.addonId })),
  ];
}
