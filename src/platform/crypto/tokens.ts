import * as crypto from 'node:crypto';

/** High-entropy bearer tokens (API keys, session ids): a fast hash is enough to store them. */
export function newToken(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(32).toString('base64url')}`;
}

/**
 * SHA-256 in hex, on every authenticated request: the one-shot `crypto.hash` (Node 20.12+) costs half of a Hash
 * object; older Node 20 releases have only the latter (a namespace import, so a missing export is not a load error).
 */
const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');

export function hashToken(token: string): string {
  return sha256Hex(token);
}
