import { Resolver } from 'node:dns/promises';

export interface OwnershipCheckSettings {
  /** DNS server to ask (`address` or `address:port`); unset: the system's resolvers. */
  dnsServer?: string;
}

/** The name whose TXT record proves a domain: `_slipway-challenge.<domain>`. */
export function challengeRecordName(hostname: string): string {
  return `_slipway-challenge.${hostname}`;
}

/** The DNS answers' codes that mean "no such record" (as opposed to a failed lookup). */
const NO_RECORD = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

/**
 * Ownership by DNS: the domain's zone must hold a TXT record `_slipway-challenge.<domain>`
 * with this claim's token. Only who controls the zone can add it, and the token is per claim,
 * so the proof names the organization that claimed it. (Reaching the platform's edge by HTTP
 * is no such proof on a shared platform: a name pointed at the edge reaches it for every
 * tenant's claim alike.) Resolves to the reason it failed, or null.
 */
export async function checkOwnership(hostname: string, token: string, settings: OwnershipCheckSettings): Promise<string | null> {
  const name = challengeRecordName(hostname);
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (settings.dnsServer) resolver.setServers([settings.dnsServer]);
  let records: string[][];
  try {
    records = await resolver.resolveTxt(name);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    if (NO_RECORD.has(code)) return `no TXT record at ${name}: add one with the value ${token}, then verify again`;
    return `the DNS lookup of ${name} failed (${code}); retry shortly`;
  }
  // A TXT record may be split into strings of 255 bytes: each record is their concatenation.
  if (records.some((chunks) => chunks.join('').trim() === token)) return null;
  return `the TXT records at ${name} do not hold this claim's token: set one to ${token}, then verify again`;
}
