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
 * deployment: for an image of the platform's registry, pull-only on the image's repository,
 * signed by the platform's token service; for an image deployed from another registry, the
 * credentials its deploy gave (none: a public image, no secret). Null without `REGISTRY_URL`
 * for the platform's own images (they then are not pulled from a registry of ours).
 */
export function pullSecretFor(config: Config, opts: { ttlSeconds?: number } = {}) {
  const target = registryTarget(config);
  return async (plan: {
    image: {
      repositoryName: string;
      registryReference?: string | null;
      pullCredentials?: { host: string; username: string; password: string } | null;
    };
  }): Promise<string | null> => {
    const { registryReference, pullCredentials } = plan.image;
    if (pullCredentials) return basicPullSecret(pullCredentials);
    if (!target) return null;
    if (registryReference && !registryReference.startsWith(`${target.host}/`)) return null;
    return registryPullSecret(target.keys, {
      issuer: target.issuer,
      service: target.service,
      registryHost: target.host,
      repository: plan.image.repositoryName,
      ttlSeconds: opts.ttlSeconds,
    });
  };
}

/** A `.dockerconfigjson` holding one registry's user name and password. */
function basicPullSecret({ host, username, password }: { host: string; username: string; password: string }): string {
  const auth = Buffer.from(`${username}:${password}`).toString('base64');
  return JSON.stringify({ auths: { [host]: { username, password, auth } } });
}
