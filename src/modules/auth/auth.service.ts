import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../platform/context.js';
import { AppError, forbidden, notFound, unauthenticated } from '../../platform/errors.js';
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../../platform/crypto/passwords.js';
import { hashToken, newToken } from '../../platform/crypto/tokens.js';
import { isoOrNull, iso } from '../../platform/http/schemas.js';
import type { Principal } from '../../platform/http/types.js';
import { addressBlock } from '../../platform/net/address-block.js';
import { UsersService } from '../users/index.js';
import type { AuthRepository } from './auth.repository.js';
import { CREDENTIALS_CHANNEL, CredentialCache } from './credential-cache.js';
import { loginPasswordChecks } from './login-checks.js';
import { openSession } from './sessions.js';
import { auditKeySignIn } from './key-sign-in-audit.js';
import { auditPasswordSignIn } from './login-audit.js';
import { isLimited, type KeyScope } from '../../platform/access/key-scope.js';
import { resolveScopeNames, type ScopeNames } from '../../platform/access/key-scope-names.js';
import type { KeyAction } from '../../platform/access/route-actions.js';

export const API_KEY_PREFIX = 'slw';
const LAST_USED_RESOLUTION_MS = 60_000;

/** How long an approved CLI login code is remembered (so it is never approved twice); the CLI waits 5 minutes at most. */
const CLI_LOGIN_CODE_DAYS = 1;

type ApiKeyRow = Awaited<ReturnType<AuthRepository['listApiKeys']>>[number];

const toApiKey = (k: ApiKeyRow) => {
  const limited = k.actions !== null || k.organization !== null;
  return {
    id: k.id,
    name: k.name,
    kind: k.kind,
    prefix: k.token_prefix,
    created: iso(k.created_at),
    last_used: isoOrNull(k.last_used_at),
    last_used_address: k.last_used_address,
    expires: isoOrNull(k.expires_at),
    scope: limited
      ? {
          organization: k.organization,
          project: k.project,
          application: k.application,
          environment: k.environment,
          actions: k.actions as KeyAction[] | null,
        }
      : null,
  };
};

export type CreatedKey = ReturnType<typeof toApiKey> & { key: string };

export interface NewApiKey {
  name: string;
  kind?: 'api_key' | 'deploy_token' | 'cli_login';
  /** Days from now, or a moment; neither: never expires. */
  expiresInDays?: number;
  expiresAt?: Date;
  scope?: ScopeNames;
}

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
   * Checks the password, with limits designed so one attacker cannot lock others out (OWASP:
   * throttle with backoff, not lockout; spare known devices). Each limit is a counter in a window
   * that an attempt reserves atomically BEFORE its password is checked (so a burst of concurrent
   * attempts gets no more checks than the allowance); the right password gives the reservation back.
   * - (account, address): LOGIN_FREE_ATTEMPTS, then one attempt per backoff (1 s, 2 s, 4 s, ... at
   *   most LOGIN_MAX_DELAY_SECONDS) since the last;
   * - account, from addresses that never signed in to it: LOGIN_MAX_ATTEMPTS, then the same backoff
   *   (guessing spread over many addresses); the addresses it signed in from before are spared;
   * - address, across accounts it never signed in to: LOGIN_ADDRESS_MAX_ACCOUNTS distinct accounts
   *   (stuffing), then one new account per backoff; accounts that signed in from it before are
   *   spared, so the others behind the same proxy keep signing in.
   * No address is limited by how many attempts it makes (only by how many accounts it tries): a
   * storm on one account from behind a NAT slows that (account, address) pair only.
   */
  async login(email: string, password: string, clientAddress: string, userAgent: string | null = null) {
    if (!this.ctx.config.PASSWORD_LOGIN)
      throw forbidden('Password sign-in is turned off on this site: sign in with single sign-on (or an API key)');
    // Limits count per IPv6 /64 (an address each would let one client rotate past them).
    const address = addressBlock(clientAddress);
    const { LOGIN_WINDOW_SECONDS: windowSeconds, LOGIN_MAX_DELAY_SECONDS: maxDelay } = this.ctx.config;
    const limit = (free: number) => ({ free, windowSeconds, maxDelay });
    const pair = { key: `pair:${address}|${email.toLowerCase()}`, limits: limit(this.ctx.config.LOGIN_FREE_ATTEMPTS) };
    const account = { key: `account:${email.toLowerCase()}`, limits: limit(this.ctx.config.LOGIN_MAX_ATTEMPTS) };
    const stuffing = { key: `address:${address}`, limits: limit(this.ctx.config.LOGIN_ADDRESS_MAX_ACCOUNTS) };

    const pairAttempt = await this.repo.reserveAttempt(pair.key, pair.limits);
    if (pairAttempt === null) {
      const wait = await this.repo.secondsUntilNextAttempt(pair.key, pair.limits);
      throw new AppError('RATE_LIMITED', `Too many failed login attempts for this account from this address; retry in ${wait} s`);
    }
    const reserved: string[] = [];
    const refuse = async (message: string) => {
      await Promise.all([pair.key, ...reserved].map((key) => this.repo.refundAttempt(key)));
      return new AppError('RATE_LIMITED', message);
    };
    if (!(await this.repo.isKnownAddress(email.toLowerCase(), address))) {
      // The first attempt on an account in the window is what the address's count of accounts counts.
      if (pairAttempt === 1) {
        if ((await this.repo.reserveAttempt(stuffing.key, stuffing.limits)) === null)
          throw await refuse('Too many failed login attempts from this address; try again later');
        reserved.push(stuffing.key);
      }
      if ((await this.repo.reserveAttempt(account.key, account.limits)) === null) {
        const wait = await this.repo.secondsUntilNextAttempt(account.key, account.limits);
        throw await refuse(`Too many failed login attempts for this account; retry in ${wait} s`);
      }
      reserved.push(account.key);
    }
    const user = await this.users.findCredentials(email);
    const valid = await verifyPassword(password, user?.password_hash ?? UNUSABLE_PASSWORD_HASH);
    loginPasswordChecks.inc({ outcome: user && valid ? 'right' : 'wrong' });
    // A failure keeps its reservations: they were its count.
    if (!user || !valid) throw unauthenticated('Invalid email or password');
    await this.repo.clearFailures(pair.key);
    await Promise.all(reserved.map((key) => this.repo.refundAttempt(key)));
    await this.repo.rememberAddress(email.toLowerCase(), address);
    const { id, token, expires } = await openSession(this.ctx.db, user.id, this.ctx.config.SESSION_TTL_HOURS, {
      method: 'password',
      address: clientAddress,
      userAgent,
    });
    await auditPasswordSignIn(
      this.ctx.db,
      { userId: user.id, username: user.username, credentialKind: 'password', credentialId: id },
      user.email,
    );
    return { token, expires, user: { id: user.id, username: user.username, email: user.email, is_admin: user.is_admin } };
  }

  /** Periodic cleanup (a pipeline sweeper): expired sessions and spent failure counters would otherwise pile up. */
  async pruneExpired() {
    await this.repo.deleteExpiredSessions(this.ctx.config.SESSION_IDLE_MINUTES);
    await this.repo.deleteStaleFailures(this.ctx.config.LOGIN_WINDOW_SECONDS);
    await this.repo.deleteOldCliLoginCodes(CLI_LOGIN_CODE_DAYS);
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
    const idleMinutes = this.ctx.config.SESSION_IDLE_MINUTES;
    const row = await this.repo.findSession(tokenHash, idleMinutes);
    if (!row) return null;
    const { credential_id, expires_at, last_seen_at, ...user } = row;
    // Like a key's last use, to the minute: enough for the idle timeout and the sessions list.
    if (Date.now() - last_seen_at.getTime() > LAST_USED_RESOLUTION_MS) await this.repo.touchSession(credential_id);
    const principal: Principal = { user, via: 'session', credentialId: credential_id };
    // Trusted from the cache no longer than the session would stay unused before it ends.
    const idleEnd = idleMinutes > 0 ? new Date(Date.now() + idleMinutes * 60_000) : expires_at;
    this.verified.remember(tokenHash, principal, idleEnd < expires_at ? idleEnd : expires_at);
    return principal;
  }

  /** The principal of an API key verified within the last few seconds (the credential cache), without a lookup or a promise. */
  knownApiKey(key: string): Principal | undefined {
    return this.verified.get(hashToken(key));
  }

  async fromApiKey(key: string, address: string | null = null): Promise<Principal | null> {
    const tokenHash = hashToken(key);
    const cached = this.verified.get(tokenHash);
    if (cached) return cached;
    const row = await this.repo.findApiKey(tokenHash);
    if (!row) return null;
    const {
      credential_id,
      last_used_at,
      last_used_address,
      expires_at,
      organization_id,
      project_id,
      application_id,
      environment_id,
      actions,
      ...user
    } = row;
    // Recording every use would turn each read into a write; a minute's resolution is plenty
    // (the cache's few seconds hide uses from it, well within that resolution).
    if (!last_used_at || Date.now() - last_used_at.getTime() > LAST_USED_RESOLUTION_MS || (address && address !== last_used_address)) {
      // A key's first use of the day is a sign-in: audited (once, whichever process wins the update).
      if (await this.repo.touchApiKeyFirstToday(credential_id, address))
        await auditKeySignIn(this.ctx.db, { userId: user.id, username: user.username, credentialId: credential_id, address });
      else await this.repo.touchApiKey(credential_id, address);
    }
    const scope: KeyScope = {
      organizationId: organization_id,
      projectId: project_id,
      applicationId: application_id,
      environmentId: environment_id,
      actions: actions as KeyAction[] | null,
    };
    const principal: Principal = { user, via: 'api_key', credentialId: credential_id, ...(isLimited(scope) ? { scope } : {}) };
    this.verified.remember(tokenHash, principal, expires_at);
    return principal;
  }

  /**
   * A new key, shown once (only its hash is kept). Limits are named by slugs and checked against
   * the user's memberships now; a deploy token is the preset "deploy one application to one
   * environment" (kind `deploy_token`, action `deploy` only).
   */
  async createApiKey(userId: string, name: string, expiresInDays?: number): Promise<CreatedKey>;
  async createApiKey(userId: string, spec: NewApiKey): Promise<CreatedKey>;
  async createApiKey(userId: string, nameOrSpec: string | NewApiKey, expiresInDays?: number): Promise<CreatedKey> {
    const spec: NewApiKey = typeof nameOrSpec === 'string' ? { name: nameOrSpec, expiresInDays } : nameOrSpec;
    const kind = spec.kind ?? 'api_key';
    let names = spec.scope ?? {};
    if (kind === 'deploy_token') {
      if (!names.organization || !names.project || !names.application || !names.environment)
        throw new AppError('VALIDATION', 'A deploy token names its organization, project, application and environment');
      if (names.actions && (names.actions.length !== 1 || names.actions[0] !== 'deploy'))
        throw new AppError('VALIDATION', "A deploy token may only 'deploy'; create an API key for other actions");
      names = { ...names, actions: ['deploy'] };
    }
    const scope = await resolveScopeNames(this.ctx.db, userId, names);
    if (spec.expiresAt && spec.expiresAt.getTime() <= Date.now()) throw new AppError('VALIDATION', 'expires_at: must be in the future');
    const expires = spec.expiresAt ?? (spec.expiresInDays ? new Date(Date.now() + spec.expiresInDays * 86400_000) : null);
    const key = newToken(API_KEY_PREFIX);
    const row = await this.repo.insertApiKey({
      id: uuidv7(),
      user_id: userId,
      name: spec.name,
      kind,
      token_hash: hashToken(key),
      token_prefix: key.slice(0, API_KEY_PREFIX.length + 9),
      expires_at: expires,
      organization_id: scope.organizationId,
      project_id: scope.projectId,
      application_id: scope.applicationId,
      environment_id: scope.environmentId,
      actions: scope.actions,
    });
    return { ...toApiKey(row), key };
  }

  /**
   * A CLI's browser login, approved by the signed-in user: a key with the limits they chose, made
   * once per code (a code approved before is refused, whoever asks), for the CLI to receive on
   * its own loopback callback.
   */
  async approveCliLogin(userId: string, request: { code: string; client: string; actions: KeyAction[]; organization?: string }) {
    const codeHash = hashToken(`cli-login:${request.code}`);
    if (!(await this.repo.spendCliLoginCode({ code_hash: codeHash, user_id: userId, client: request.client })))
      throw new AppError('CONFLICT', 'This login code was already approved: start the login again from the CLI');
    const key = await this.createApiKey(userId, {
      name: `${request.client} (browser login)`,
      kind: 'cli_login',
      scope: { organization: request.organization, actions: request.actions },
    });
    await this.repo.linkCliLoginKey(codeHash, key.id);
    return key;
  }

  async listApiKeys(userId: string) {
    return (await this.repo.listApiKeys(userId)).map(toApiKey);
  }

  /** A credential of `userId` was revoked here: this process forgets it at once (the others on the database's announcement). */
  forgetUser(userId: string) {
    this.verified.changed(userId);
  }

  async deleteApiKey(userId: string, id: string) {
    if (!(await this.repo.deleteApiKey(userId, id))) throw notFound('API key');
    // This process forgets at once; the others on the database's announcement.
    this.verified.changed(userId);
  }
}
