import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { AppError, notFound, unauthenticated } from '../../platform/errors.js';
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../../platform/crypto/passwords.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';
import { isoOrNull, iso } from '../../platform/http/schemas.js';
import { setAuditActor } from '../../platform/audit/request-audit.js';
import type { Principal } from '../../platform/http/types.js';
import { UsersService } from '../users/index.js';
import type { AuthRepository } from './auth.repository.js';
import { CREDENTIALS_CHANNEL, CredentialCache } from './credential-cache.js';

export const API_KEY_PREFIX = 'slw';
const LAST_USED_RESOLUTION_MS = 60_000;

type ApiKeyRow = Awaited<ReturnType<AuthRepository['listApiKeys']>>[number];

const toApiKey = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  prefix: k.token_prefix,
  created: iso(k.created_at),
  last_used: isoOrNull(k.last_used_at),
  expires: isoOrNull(k.expires_at),
});

export class AuthService {
  private readonly repo: AuthRepository;
  private readonly users: UsersService;
  private readonly verified: CredentialCache;

  constructor(
    private readonly ctx: AppContext,
    repo: AuthRepository,
    users: UsersService,
  ) {
    this.repo = repo;
    this.users = users;
    this.verified = new CredentialCache(ctx.config.CREDENTIAL_CACHE_SECONDS);
  }

  /** Drops cached credentials as soon as any process changes them (the TTL bounds a missed notice). */
  followCredentialChanges(notifications: {
    subscribeChannel(channel: string, listener: (payload: string | null) => void): Promise<unknown>;
  }) {
    return notifications.subscribeChannel(CREDENTIALS_CHANNEL, (userId) => this.verified.changed(userId));
  }

  /**
   * Checks the password. Failures are counted per (account, address), never per account
   * alone, so a stranger's bad guesses cannot lock the owner out: after LOGIN_FREE_ATTEMPTS
   * failures each further attempt from that pair waits twice as long as the one before
   * (1 s, 2 s, 4 s, ... up to the window), and LOGIN_MAX_ATTEMPTS ends the pair's attempts
   * for the window. One address guessing across accounts is capped at LOGIN_MAX_ATTEMPTS too.
   */
  async login(email: string, password: string, address: string) {
    const { LOGIN_MAX_ATTEMPTS: max, LOGIN_FREE_ATTEMPTS: free, LOGIN_WINDOW_SECONDS: window } = this.ctx.config;
    const pairKey = `pair:${email.toLowerCase()}|${address}`;
    const addressKey = `address:${address}`;
    const pair = await this.repo.failureState(pairKey, window);
    if (pair) {
      const wait = pair.count >= max ? window : pair.count >= free ? Math.min(window, 2 ** (pair.count - free)) : 0;
      const left = Math.ceil(wait - pair.secondsSinceLast);
      if (left > 0)
        throw new AppError('RATE_LIMITED', `Too many failed login attempts for this account from this address; retry in ${left} s`);
    }
    if ((await this.repo.failuresInWindow([addressKey], window)) >= max) {
      throw new AppError('RATE_LIMITED', 'Too many failed login attempts from this address; try again later');
    }
    const user = await this.users.findCredentials(email);
    const valid = await verifyPassword(password, user?.password_hash ?? UNUSABLE_PASSWORD_HASH);
    if (!user || !valid) {
      await Promise.all([this.repo.recordFailure(pairKey, window), this.repo.recordFailure(addressKey, window)]);
      throw unauthenticated('Invalid email or password');
    }
    await this.repo.clearFailures(pairKey);
    setAuditActor({ userId: user.id, username: user.username, credentialKind: 'password', credentialId: null });
    const token = newToken('sess');
    const expires = new Date(Date.now() + this.ctx.config.SESSION_TTL_HOURS * 3600_000);
    await this.repo.insertSession({ id: uuidv7(), token_hash: hashToken(token), user_id: user.id, expires_at: expires });
    return { token, expires, user: { id: user.id, username: user.username, email: user.email, is_admin: user.is_admin } };
  }

  /** Periodic cleanup (a pipeline sweeper): expired sessions and spent failure counters would otherwise pile up. */
  async pruneExpired() {
    await this.repo.deleteExpiredSessions();
    await this.repo.deleteStaleFailures(this.ctx.config.LOGIN_WINDOW_SECONDS);
  }

  logout(token: string) {
    const tokenHash = hashToken(token);
    this.verified.forget(tokenHash);
    return this.repo.deleteSession(tokenHash);
  }

  async fromSession(token: string): Promise<Principal | null> {
    const tokenHash = hashToken(token);
    const cached = this.verified.get(tokenHash);
    if (cached) return cached;
    const row = await this.repo.findSession(tokenHash);
    if (!row) return null;
    const { credential_id, expires_at, ...user } = row;
    const principal: Principal = { user, via: 'session', credentialId: credential_id };
    this.verified.remember(tokenHash, principal, expires_at);
    return principal;
  }

  async fromApiKey(key: string): Promise<Principal | null> {
    const tokenHash = hashToken(key);
    const cached = this.verified.get(tokenHash);
    if (cached) return cached;
    const row = await this.repo.findApiKey(tokenHash);
    if (!row) return null;
    const { credential_id, last_used_at, expires_at, ...user } = row;
    // Recording every use would turn each read into a write; a minute's resolution is plenty
    // (the cache's few seconds hide uses from it, well within that resolution).
    if (!last_used_at || Date.now() - last_used_at.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.repo.touchApiKey(credential_id);
    }
    const principal: Principal = { user, via: 'api_key', credentialId: credential_id };
    this.verified.remember(tokenHash, principal, expires_at);
    return principal;
  }

  async createApiKey(userId: string, name: string, expiresInDays?: number) {
    const key = newToken(API_KEY_PREFIX);
    const row = await this.repo.insertApiKey({
      id: uuidv7(),
      user_id: userId,
      name,
      token_hash: hashToken(key),
      token_prefix: key.slice(0, API_KEY_PREFIX.length + 9),
      expires_at: expiresInDays ? new Date(Date.now() + expiresInDays * 86400_000) : null,
    });
    return { ...toApiKey(row), key };
  }

  async listApiKeys(userId: string) {
    return (await this.repo.listApiKeys(userId)).map(toApiKey);
  }

  async deleteApiKey(userId: string, id: string) {
    if (!(await this.repo.deleteApiKey(userId, id))) throw notFound('API key');
    // This process forgets at once; the others on the database's announcement.
    this.verified.changed(userId);
  }
}
