import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fingerprintOf } from '../ssh-keys/index.js';

/**
 * The gateway's host key: generated once into DATA_DIR/ssh and reused, so clients that trusted it
 * keep trusting it across restarts. Returns the private key (OpenSSH format) and its fingerprint.
 */
export async function loadHostKey(dataDir: string): Promise<{ privateKey: string; fingerprint: string }> {
  const { default: ssh2 } = await import('ssh2');
  const dir = join(dataDir, 'ssh');
  const file = join(dir, 'host_ed25519_key');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  let privateKey: string;
  try {
    privateKey = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const generated = ssh2.utils.generateKeyPairSync('ed25519', { comment: 'slipway-ssh-gateway' });
    try {
      // `wx`: two processes starting at once keep the first one's key.
      await writeFile(file, generated.private, { mode: 0o600, flag: 'wx' });
      privateKey = generated.private;
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
      privateKey = await readFile(file, 'utf8');
    }
  }
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error || Array.isArray(parsed)) throw new Error(`${file}: not an SSH private key`);
  return { privateKey, fingerprint: fingerprintOf(parsed.getPublicSSH()) };
}
