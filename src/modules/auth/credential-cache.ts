import { LRUCache } from 'lru-cache';
import type { Principal } from '../../platform/http/types.js';

/** Where credential changes are announced: a trigger on users, sessions and api_keys notifies this channel (migration 0017). */
export const CREDENTIALS_CHANNEL = 'slipway_credentials';

/**
 * Verified credentials (by the hash of the token), kept a few seconds so a burst of requests
 * costs one lookup. Correctness bound: an entry lives at most `ttlSeconds`, never past the
 * credential's own expiry, and is dropped as soon as any process announces a change to its user
 * (deleted key, logout, user changed or deleted) on CREDENTIALS_CHANNEL; after a lost LISTEN
 * connection everything is dropped. A revoked credential therefore stops working everywhere
 * within `ttlSeconds` at worst, at once in practice.
 */
export class CredentialCache {
  private readonly entries: LRUCache<string, Principal> | null;

  constructor(ttlSeconds: number, maxEntries = 10_000) {
    this.entries = ttlSeconds > 0 ? new LRUCache({ max: maxEntries, ttl: ttlSeconds * 1000, ttlAutopurge: false }) : null;
  }

  get(tokenHash: string): Principal | undefined {
    return this.entries?.get(tokenHash);
  }

  remember(tokenHash: string, principal: Principal, credentialExpires: Date | null) {
    if (!this.entries) return;
    const left = credentialExpires ? credentialExpires.getTime() - Date.now() : Infinity;
    if (left <= 0) return;
    this.entries.set(tokenHash, principal, left < this.entries.ttl ? { ttl: left } : undefined);
  }

  forget(tokenHash: string) {
    this.entries?.delete(tokenHash);
  }

  /** A change announced for `userId` (or, with null, possibly missed changes): drop what it may affect. */
  changed(userId: string | null) {
    if (!this.entries) return;
    if (userId === null) return this.entries.clear();
    for (const [hash, principal] of this.entries.entries()) if (principal.user.id === userId) this.entries.delete(hash);
  }
}
