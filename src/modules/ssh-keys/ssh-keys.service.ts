import { v7 as uuidv7 } from 'uuid';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import { iso, isoOrNull } from '../../platform/http/schemas.js';
import type { SshKeyRow, SshKeysRepository } from './ssh-keys.repository.js';
import { fingerprintOf, parsePublicKey } from './ssh-key-format.js';

/** Most keys one user may register (a laptop, a CI runner, a few more). */
export const MAX_KEYS_PER_USER = 50;

const view = (row: SshKeyRow) => ({
  id: row.id,
  name: row.name,
  fingerprint: row.fingerprint,
  public_key: row.public_key,
  created_at: iso(row.created_at),
  last_used_at: isoOrNull(row.last_used_at),
});

/** Users' SSH public keys: what `git push` over the SSH gateway authenticates with. */
export class SshKeysService {
  constructor(private readonly repo: SshKeysRepository) {}

  async list(userId: string) {
    return (await this.repo.listForUser(userId)).map(view);
  }

  async add(userId: string, body: { public_key: string; name?: string }) {
    const parsed = await parsePublicKey(body.public_key);
    if ('error' in parsed) throw invalid('public_key', parsed.error);
    if ((await this.repo.countForUser(userId)) >= MAX_KEYS_PER_USER)
      throw conflict(`A user may register at most ${MAX_KEYS_PER_USER} SSH keys: remove one first`);
    const name = body.name?.trim() || parsed.comment || parsed.fingerprint;
    const row = await this.repo.insert({
      id: uuidv7(),
      user_id: userId,
      name,
      public_key: parsed.publicKey,
      fingerprint: parsed.fingerprint,
    });
    // One key names one user (the gateway knows who pushes by the key alone).
    if (!row) throw conflict(`The SSH key ${parsed.fingerprint} is registered already`);
    return view(row);
  }

  async remove(userId: string, id: string) {
    if (!(await this.repo.delete(userId, id))) throw notFound('SSH key');
  }

  /** The user a presented public key blob belongs to, or null (the gateway's lookup). */
  async userOfKey(blob: Buffer) {
    const found = await this.repo.findByFingerprint(fingerprintOf(blob));
    if (!found || found.public_key.split(' ')[1] !== blob.toString('base64')) return null;
    await this.repo.touch(found.id);
    return { id: found.user_id, username: found.username, email: found.email, is_admin: found.is_admin, keyId: found.id };
  }
}
