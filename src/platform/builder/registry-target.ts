import type { Config } from '../../config.js';
import { registryPullSecret } from '../crypto/registry-token.js';
import { SigningKeys } from '../crypto/signing-key.js';

export interface RegistryTarget {
  /** `host[:port]` as used in image references. */
  host: string;
  /** Plain HTTP (an `http://` REGISTRY_URL): TLS verification off. */
  insecure: boolean;
  service: string;
  issuer: string;
  keys: SigningKeys;
}

/** `REGISTRY_URL` (`http://host:port`, `https://host` or a bare `host[:port]`) as a push target. */
export function registryTarget(config: Config): RegistryTarget | null {
  if (!config.REGISTRY_URL) return null;
  const url = /^[a-z]+:\/\//i.test(config.REGISTRY_URL) ? new URL(config.REGISTRY_URL) : new URL(`https://${config.REGISTRY_URL}`);
  return {
    host: url.host,
    insecure: url.protocol === 'http:',
    service: config.REGISTRY_SERVICE,
    issuer: config.TOKEN_ISSUER,
    keys: SigningKeys.forConfig(config),
  };
}

/** The registry's `host[:port]` as image references name it, or null without `REGISTRY_URL`. */
export function registryHost(config: Config): string | null {
  return registryTarget(config)?.host ?? null;
}

/**
 * What the Kubernetes runtime calls to get an image pull secret (`.dockerconfigjson`) for a
 * deployment: pull-only on the image's repository, signed by the platform's token service.
 * Null without `REGISTRY_URL` (images then are not pulled from a registry of ours).
 */
export function pullSecretFor(config: Config, opts: { ttlSeconds?: number } = {}) {
  const target = registryTarget(config);
  return async (plan: { image: { repositoryName: string } }): Promise<string | null> => {
    if (!target) return null;
    return registryPullSecret(target.keys, {
      issuer: target.issuer,
      service: target.service,
      registryHost: target.host,
      repository: plan.image.repositoryName,
      ttlSeconds: opts.ttlSeconds,
    });
  };
}
