import { createHash } from 'node:crypto';

/** Key types a user may register: what OpenSSH generates today (DSA and short RSA keys are refused). */
const ACCEPTED = new Set(['ssh-ed25519', 'ssh-rsa', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521']);
const MIN_RSA_BITS = 2048;

/** OpenSSH's fingerprint of a public key blob: `SHA256:` and the unpadded base64 of its hash. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/**
 * A public key as `ssh-keygen` writes it (`type base64 [comment]`), parsed: its canonical text
 * (without the comment), fingerprint and comment, or the reason it is refused.
 */
export async function parsePublicKey(
  text: string,
): Promise<{ publicKey: string; fingerprint: string; comment: string } | { error: string }> {
  const line = text.trim();
  if (/PRIVATE KEY/.test(line)) return { error: 'this is a private key: register the public one (the .pub file)' };
  if (line.includes('\n')) return { error: 'one key, on one line (the contents of a .pub file)' };
  // Loaded on first use, not at start: ssh2's WebAssembly ciphers hold 16 MiB for the process's life.
  const { default: ssh2 } = await import('ssh2');
  const parsed = ssh2.utils.parseKey(line);
  if (parsed instanceof Error || Array.isArray(parsed))
    return { error: 'not an OpenSSH public key (expected "ssh-ed25519 AAAA... comment")' };
  if (parsed.isPrivateKey()) return { error: 'this is a private key: register the public one (the .pub file)' };
  if (!ACCEPTED.has(parsed.type))
    return { error: `key type ${parsed.type} is not accepted (use ed25519, ECDSA or RSA of ${MIN_RSA_BITS}+ bits)` };
  const blob = parsed.getPublicSSH();
  if (parsed.type === 'ssh-rsa' && rsaBits(blob) < MIN_RSA_BITS) return { error: `RSA keys need at least ${MIN_RSA_BITS} bits` };
  return { publicKey: `${parsed.type} ${blob.toString('base64')}`, fingerprint: fingerprintOf(blob), comment: parsed.comment ?? '' };
}

/** Bits of an `ssh-rsa` blob's modulus (string type, mpint e, mpint n). */
function rsaBits(blob: Buffer): number {
  let at = 0;
  const next = () => {
    const length = blob.readUInt32BE(at);
    const value = blob.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    return value;
  };
  next();
  next();
  const n = next();
  let first = 0;
  while (first < n.length && n[first] === 0) first++;
  return (n.length - first) * 8;
}
