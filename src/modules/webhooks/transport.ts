import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress } from '../../platform/net/public-address.js';

export const REFUSED_WEBHOOK_ADDRESS =
  'url must be an http(s) address of a public host (private and loopback addresses need WEBHOOK_ALLOW_PRIVATE=true)';

export class RefusedAddress extends Error {
  constructor() {
    super(REFUSED_WEBHOOK_ADDRESS);
  }
}

function hostOf(url: URL) {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** Checks a receiver address when it is saved: http(s), no credentials in it, and (unless allowed) only public addresses. */
export async function checkWebhookUrl(text: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RefusedAddress();
  }
  if (!/^https?:$/.test(url.protocol) || !url.hostname || url.username || url.password) throw new RefusedAddress();
  if (allowPrivate) return url;
  const host = hostOf(url);
  let addresses: Array<{ address: string }>;
  try {
    addresses = isIP(host) ? [{ address: host }] : await lookup(host, { all: true, verbatim: true });
  } catch {
    throw new RefusedAddress();
  }
  if (addresses.length === 0 || !addresses.every((a) => isPublicAddress(a.address))) throw new RefusedAddress();
  return url;
}

/**
 * Resolves like the system does, then refuses unless every address is allowed: the connection
 * goes to an address checked now, so a name re-pointed at a private address after the webhook
 * was saved (DNS rebinding) reaches nothing.
 */
function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (err, found) => {
      const addresses = found as unknown as LookupAddress[];
      if (err) return callback(err, '', 4);
      if (!addresses.length || (!allowPrivate && !addresses.every((a) => isPublicAddress(a.address)))) {
        return callback(new RefusedAddress() as NodeJS.ErrnoException, '', 4);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** POSTs one delivery; resolves with the receiver's status, rejects when there is none. Redirects are not followed. */
export function postDelivery(
  urlText: string,
  body: string,
  headers: Record<string, string>,
  options: { allowPrivate: boolean; timeoutMs: number },
): Promise<number> {
  const url = new URL(urlText);
  const host = hostOf(url);
  if (isIP(host) && !options.allowPrivate && !isPublicAddress(host)) return Promise.reject(new RefusedAddress());
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        agent: false,
        lookup: guardedLookup(options.allowPrivate),
        timeout: options.timeoutMs,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (response) => {
        response.resume(); // the receiver's answer body is not kept
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.setTimeout(options.timeoutMs, () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}
