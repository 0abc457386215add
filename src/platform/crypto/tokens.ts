import { hash, randomBytes } from 'node:crypto';

/** High-entropy bearer tokens (API keys, session ids): a fast hash is enough to store them. */
export function newToken(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** SHA-256 in hex; the one-shot `hash` (Node 20.12+) costs half of a Hash object on every authenticated request. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}
