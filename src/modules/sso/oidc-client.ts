import type * as OpenidClient from 'openid-client';
import { AppError } from '../../platform/errors.js';

/** How long a discovered issuer (its endpoints and keys' address) is reused before it is read again. */
const DISCOVERY_TTL_MS = 10 * 60_000;
/** An identity provider answers within this, or the sign-in is refused (seconds). */
const PROVIDER_TIMEOUT_SECONDS = 10;

export interface IssuerSettings {
  id: string;
  discoveryUrl: string;
  clientId: string;
  clientSecret: string;
  updatedAt: Date;
}

/** A loopback issuer (a developer's or a test's provider) may speak plain HTTP; every other must use HTTPS. */
function isLoopback(url: URL) {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** The identity provider could not be reached or answered nonsense: the sign-in cannot go on (4xx: nothing to retry blindly). */
export const providerUnavailable = (detail: string) =>
  new AppError('IDENTITY_PROVIDER_UNAVAILABLE', `The identity provider cannot be reached or answered badly: ${detail}`);

let loaded: typeof OpenidClient | null = null;

/** openid-client (and its JOSE library), loaded with the first sign-in: a platform without SSO never holds it. */
export async function openidClient(): Promise<typeof OpenidClient> {
  loaded ??= await import('openid-client');
  return loaded;
}

/**
 * Talks to configured issuers through `openid-client` (discovery, authorization URL, code grant with
 * its checks). Discovered configurations are kept per issuer for DISCOVERY_TTL_MS, and dropped when
 * the issuer's settings change.
 */
export class OidcClients {
  private readonly discovered = new Map<string, { at: number; updatedAt: number; config: OpenidClient.Configuration }>();

  async configuration(issuer: IssuerSettings): Promise<OpenidClient.Configuration> {
    const cached = this.discovered.get(issuer.id);
    if (cached && cached.updatedAt === issuer.updatedAt.getTime() && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
    const url = new URL(issuer.discoveryUrl);
    const client = await openidClient();
    let config: OpenidClient.Configuration;
    try {
      config = await client.discovery(
        url,
        issuer.clientId,
        { client_secret: issuer.clientSecret },
        client.ClientSecretBasic(issuer.clientSecret),
        {
          timeout: PROVIDER_TIMEOUT_SECONDS,
          ...(url.protocol === 'http:' && isLoopback(url) ? { execute: [client.allowInsecureRequests] } : {}),
        },
      );
    } catch (err) {
      throw providerUnavailable(`discovery at ${url.origin} failed (${describe(err)})`);
    }
    config.timeout = PROVIDER_TIMEOUT_SECONDS;
    this.discovered.set(issuer.id, { at: Date.now(), updatedAt: issuer.updatedAt.getTime(), config });
    return config;
  }

  forget(issuerId: string) {
    this.discovered.delete(issuerId);
  }
}

/** A short reason from openid-client's errors (never a token or secret: they carry codes and messages). */
export function describe(err: unknown): string {
  // Not loaded yet: the error cannot be one of its own.
  const client = loaded;
  if (client && err instanceof client.AuthorizationResponseError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  if (client && err instanceof client.ResponseBodyError) return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  const e = err as { message?: string; cause?: { message?: string; code?: string } };
  const cause = e?.cause?.code ?? e?.cause?.message;
  return `${e?.message ?? String(err)}${cause ? ` (${cause})` : ''}`.slice(0, 300);
}
