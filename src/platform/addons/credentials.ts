import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../crypto/secret-box.js';
import type { AddonKind } from '../db/schema.js';

/** An add-on's passwords: the attached applications' and (Postgres) the platform's superuser's. Sealed in `addons.credentials_sealed`. */
export interface AddonCredentials {
  user: string;
  password: string;
  database?: string;
  adminUser?: string;
  adminPassword?: string;
}

/** 32 random bytes, URL-safe: usable in a URL and a config file without escaping. */
export function newPassword(): string {
  return randomBytes(32).toString('base64url');
}

export function newCredentials(kind: AddonKind): AddonCredentials {
  return kind === 'postgres'
    ? { user: 'app', password: newPassword(), database: 'app', adminUser: 'slipway', adminPassword: newPassword() }
    : { user: 'default', password: newPassword() };
}

export const sealCredentials = (secrets: SecretBox, c: AddonCredentials) => secrets.seal(JSON.stringify(c));
export const openCredentials = (secrets: SecretBox, sealed: string) => JSON.parse(secrets.open(sealed)) as AddonCredentials;

/**
 * The URL an attached application gets. Locally the host is its own sandbox's loopback: the
 * platform gives each attached sandbox's network helper a forward of this port (and no other
 * sandbox one); on Kubernetes it is the add-on's Service (`host`), behind its NetworkPolicy.
 */
export function connectionUrl(kind: AddonKind, port: number, c: AddonCredentials, host: string | null = null): string {
  const at = host ?? '127.0.0.1';
  return kind === 'postgres'
    ? `postgres://${c.user}:${c.password}@${at}:${port}/${c.database}`
    : `redis://${c.user}:${c.password}@${at}:${port}`;
}
