import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Authenticated encryption (AES-256-GCM) of secrets at rest under a keyring.
 * Ciphertexts name the key that sealed them, so rotating `SECRET_KEY` keeps old
 * values readable (old keys go in `SECRET_KEY_PREVIOUS`) until they are re-sealed.
 */
export interface SecretKeyring {
  current: Buffer;
  previous: Buffer[];
}

const FORMAT = 'v1';

/** Accepts 32 bytes as base64/hex, or any passphrase (stretched with SHA-256). */
export function parseKey(text: string): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-f]{64}$/i.test(trimmed)) return Buffer.from(trimmed, 'hex');
  const b64 = Buffer.from(trimmed, 'base64');
  if (b64.length === 32 && /^[A-Za-z0-9+/_-]+=*$/.test(trimmed)) return b64;
  return createHash('sha256').update(trimmed).digest();
}

export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

export function generateKeyText(): string {
  return randomBytes(32).toString('base64');
}

/** The key from the environment, or one generated once into the data directory. */
export function loadKeyring(dataDir: string, secretKey?: string, previous?: string): SecretKeyring {
  let currentText = secretKey;
  if (!currentText) {
    const file = join(dataDir, 'secret.key');
    if (!existsSync(file)) {
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(file, generateKeyText() + '\n', { mode: 0o600, flag: 'wx' });
    }
    currentText = readFileSync(file, 'utf8');
  }
  const prev = (previous ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parseKey);
  return { current: parseKey(currentText), previous: prev };
}

export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  readonly currentKeyId: string;

  constructor(private readonly keyring: SecretKeyring) {
    this.currentKeyId = keyId(keyring.current);
    this.keys.set(this.currentKeyId, keyring.current);
    for (const k of keyring.previous) this.keys.set(keyId(k), k);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keyring.current, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [FORMAT, this.currentKeyId, iv.toString('base64'), tag.toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const [format, kid, iv, tag, body] = sealed.split(':');
    const key = kid ? this.keys.get(kid) : undefined;
    if (format !== FORMAT || !key || !iv || !tag || body === undefined) {
      throw new Error(`Cannot decrypt secret sealed with key ${kid ?? '?'}: add that key to SECRET_KEY_PREVIOUS`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }

  isCurrent(sealed: string): boolean {
    return sealed.split(':')[1] === this.currentKeyId;
  }
}
