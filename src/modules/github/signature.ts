import { createHmac, timingSafeEqual } from 'node:crypto';

/** GitHub's `X-Hub-Signature-256`: `sha256=` + HMAC-SHA256 of the raw body under the hook secret. */
export function signBody(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function verifySignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header || !/^sha256=[0-9a-f]{64}$/i.test(header)) return false;
  const expected = Buffer.from(signBody(secret, body), 'utf8');
  const given = Buffer.from(header.toLowerCase(), 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
