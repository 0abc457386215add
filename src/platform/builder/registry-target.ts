import type { Config } from '../../config.js';
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
