import { createHmac } from 'node:crypto';

/** `X-Slipway-Signature`: `sha256=` and the hex HMAC-SHA256 of the exact body bytes under the webhook's secret. */
export function signatureOf(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
