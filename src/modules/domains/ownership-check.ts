import { request } from 'node:http';
import { OWNERSHIP_CHALLENGE_PREFIX } from '../../platform/edge/edge-directory.js';

export interface OwnershipCheckSettings {
  /** The edge's public HTTP port (80). */
  port: number;
  /** Connect here instead of resolving the name (tests, split-horizon DNS). */
  address?: string;
}

export function ownershipUrl(hostname: string, token: string): string {
  return `http://${hostname}${OWNERSHIP_CHALLENGE_PREFIX}${token}`;
}

/**
 * Ownership by HTTP: the name must reach this platform's edge, which answers the domain's
 * token at `/.well-known/slipway-domain/<token>`. Whoever can point a name at the edge
 * controls its DNS, the same proof an ACME HTTP-01 challenge accepts. Resolves to the
 * reason it failed, or null.
 */
export function checkOwnership(hostname: string, token: string, settings: OwnershipCheckSettings): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: settings.address ?? hostname,
        port: settings.port,
        path: `${OWNERSHIP_CHALLENGE_PREFIX}${token}`,
        headers: { host: hostname },
        timeout: 5000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (body.length < 1024) body += chunk;
        });
        res.on('end', () =>
          resolve(
            res.statusCode === 200 && body.trim() === token
              ? null
              : `http://${hostname}${OWNERSHIP_CHALLENGE_PREFIX}… answered ${res.statusCode} without the token: point the name at the platform's edge`,
          ),
        );
        res.on('error', () => resolve(`http://${hostname} closed the connection`));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve(`http://${hostname} is not reachable (${err.code ?? err.message}): point the name at the platform's edge`),
    );
    req.end();
  });
}
