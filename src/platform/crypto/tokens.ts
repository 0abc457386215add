import { createHash, randomBytes } from 'node:crypto';

/** High-entropy bearer tokens (API keys, session ids): a fast hash is enough to store them. */
export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
