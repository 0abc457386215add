import type { AppContext } from '../../platform/context.js';
import type { SigningKeys } from '../../platform/crypto/signing-key.js';
import { AppError, unauthenticated } from '../../platform/errors.js';
import type { AuthenticatedUser } from '../../platform/http/types.js';
import type { AuthService } from '../auth/index.js';
import { RegistryRepository } from './registry.repository.js';
import { signAccessToken, signRefreshToken, verifyRefreshToken } from '../../platform/crypto/registry-token.js';
import { parseScopes, repositorySlugs, type GrantedAccess } from './scopes.js';
import { checkScope, isLimited, type KeyScope } from '../../platform/access/key-scope.js';
import type { KeyAction, RouteNeed } from '../../platform/access/route-actions.js';

/** What an organization member may do to its repositories (members may change everything). */
const MEMBER_ACTIONS = new Set(['pull', 'push', 'delete']);
/**
 * What a scoped key needs for each registry action, as the API route doing the same would ask:
 * pulling is reading images, pushing one is deploying (to the application at all, as `git push`
 * asks: an image serves every environment), deleting is managing.
 */
const SCOPED_ACTION: Record<string, { method: string; need: RouteNeed }> = {
  pull: { method: 'GET', need: { anyOf: ['read', 'deploy'] satisfies KeyAction[] } },
  push: { method: 'GET', need: { anyOf: ['deploy'] satisfies KeyAction[] } },
  delete: { method: 'DELETE', need: { anyOf: ['manage'] satisfies KeyAction[] } },
};
const REFRESH_TOKEN_DAYS = 30;
/** A compact JWS (three base64url parts); API keys never look like one. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A user with an API key, or the platform itself with a fixed grant (its own pushes). */
export type RegistryCaller =
  | {
      kind: 'user';
      user: AuthenticatedUser;
      /** refresh tokens stay tied to this key and die with it */ apiKeyId: string;
      /** Came with a refresh token: it is not swapped for a fresh one, so it still ends on its date. */
      viaRefreshToken?: boolean;
      /** The key's limits (a scoped key, or a deploy token): its tokens grant no more than its API calls may do. */
      scope?: KeyScope;
    }
  | { kind: 'platform'; subject: string; grant: GrantedAccess[] };

export interface TokenRequest {
  service?: string;
  scopes: string[];
  /** `offline_token=true` (GET) or `access_type=offline` (POST): also issue a refresh token. */
  offline: boolean;
}

export interface TokenResponse {
  token: string;
  access_token: string;
  expires_in: number;
  issued_at: string;
  scope: string;
  refresh_token?: string;
}

/**
 * The registry token service (Docker registry token authentication specification):
 * authenticates an API key, grants per repository only the actions its user may do,
 * and signs the grant for the registry.
 */
export class RegistryTokenService {
  private readonly repo: RegistryRepository;

  constructor(
    private readonly ctx: AppContext,
    repo: RegistryRepository,
    private readonly keys: SigningKeys,
    private readonly auth: AuthService,
  ) {
    this.repo = repo;
  }

  /**
   * `Authorization: Basic` with any username and, as password, an API key or a refresh token
   * we signed (what an image pull secret holds: a kubelet only speaks Basic); null when
   * absent or wrong.
   */
  async fromBasic(header: string | undefined): Promise<RegistryCaller | null> {
    const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header ?? '');
    if (!match) return null;
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return null;
    const password = decoded.slice(colon + 1);
    return JWT_SHAPE.test(password) ? this.fromRefreshToken(password, this.ctx.config.REGISTRY_SERVICE) : this.fromApiKey(password);
  }

  async fromApiKey(key: string): Promise<RegistryCaller | null> {
    if (!key) return null;
    const principal = await this.auth.fromApiKey(key);
    if (!principal) return null;
    return { kind: 'user', user: principal.user, apiKeyId: principal.credentialId, ...(principal.scope ? { scope: principal.scope } : {}) };
  }

  /** A refresh token we issued: a user's while its API key still exists, or a platform grant. */
  async fromRefreshToken(token: string, service: string): Promise<RegistryCaller | null> {
    const payload = await verifyRefreshToken(this.keys, token, { issuer: this.ctx.config.TOKEN_ISSUER, service });
    if (!payload || typeof payload.sub !== 'string') return null;
    if (Array.isArray(payload.grant)) return { kind: 'platform', subject: payload.sub, grant: payload.grant as GrantedAccess[] };
    if (typeof payload.key !== 'string') return null;
    const row = await this.repo.findApiKeyUser(payload.key);
    if (!row || row.id !== payload.sub) return null;
    const { credential_id, organization_id, project_id, application_id, environment_id, actions, ...user } = row;
    const scope: KeyScope = {
      organizationId: organization_id,
      projectId: project_id,
      applicationId: application_id,
      environmentId: environment_id,
      actions: actions as KeyAction[] | null,
    };
    return { kind: 'user', user, apiKeyId: credential_id, viaRefreshToken: true, ...(isLimited(scope) ? { scope } : {}) };
  }

  /** Checks the requested `service`: tokens are only minted for the configured registry. */
  serviceOf(requested: string | undefined): string {
    const service = this.ctx.config.REGISTRY_SERVICE;
    if (requested !== undefined && requested !== service) {
      throw new AppError('BAD_REQUEST', `Unknown service "${requested}"; this token service serves "${service}"`);
    }
    return service;
  }

  async issue(caller: RegistryCaller, request: TokenRequest): Promise<TokenResponse> {
    const service = this.serviceOf(request.service);
    const access =
      caller.kind === 'user' ? await this.grant(caller.user.id, request.scopes, caller) : grantWithin(caller.grant, request.scopes);
    const signed = await signAccessToken(this.keys, {
      issuer: this.ctx.config.TOKEN_ISSUER,
      service,
      subject: caller.kind === 'user' ? caller.user.username : caller.subject,
      access,
      expiresInSeconds: this.ctx.config.REGISTRY_TOKEN_TTL_SECONDS,
    });
    const response: TokenResponse = {
      token: signed.token,
      access_token: signed.token,
      expires_in: signed.expiresIn,
      issued_at: signed.issuedAt.toISOString(),
      scope: access
        .filter((a) => a.actions.length > 0)
        .map((a) => `${a.type}:${a.name}:${a.actions.join(',')}`)
        .join(' '),
    };
    if (request.offline && caller.kind === 'user' && !caller.viaRefreshToken) {
      response.refresh_token = await signRefreshToken(this.keys, {
        issuer: this.ctx.config.TOKEN_ISSUER,
        service,
        subject: caller.user.id,
        claims: { key: caller.apiKeyId },
        expiresInSeconds: REFRESH_TOKEN_DAYS * 86400,
      });
    }
    return response;
  }

  /**
   * Access per requested scope: only repositories of the user's organizations, only member
   * actions, and for a scoped key only what its scope allows on that application.
   */
  async grant(userId: string, scopeValues: string[], key?: { apiKeyId: string; scope?: KeyScope }): Promise<GrantedAccess[]> {
    const granted: GrantedAccess[] = [];
    for (const scope of parseScopes(scopeValues)) {
      let actions: string[] = [];
      const slugs = scope.type === 'repository' ? repositorySlugs(scope.name) : null;
      if (slugs) {
        const found = await this.repo.repositoryAccess(userId, ...slugs);
        if (found?.member_id) actions = scope.actions.filter((a) => MEMBER_ACTIONS.has(a));
        if (found && key?.scope) actions = await this.withinKeyScope(userId, key.apiKeyId, key.scope, found.application_id, actions);
      }
      const same = granted.find((g) => g.type === scope.type && g.name === scope.name);
      if (same) same.actions = [...new Set([...same.actions, ...actions])];
      else granted.push({ type: scope.type, name: scope.name, actions });
    }
    return granted;
  }

  /** The registry actions a scoped key may take on an application's repository: the same check its API calls get. */
  private async withinKeyScope(userId: string, apiKeyId: string, scope: KeyScope, applicationId: string, actions: string[]) {
    const allowed: string[] = [];
    for (const action of actions) {
      const { method, need } = SCOPED_ACTION[action]!;
      const refusal = await checkScope(this.ctx.db, userId, scope, {
        method,
        need,
        params: { application_id: applicationId },
        query: {},
        body: {},
        credentialId: apiKeyId,
      });
      if (!refusal) allowed.push(action);
    }
    return allowed;
  }
}

/** Access a platform grant allows for the requested scopes: the intersection. */
function grantWithin(grant: GrantedAccess[], scopeValues: string[]): GrantedAccess[] {
  return parseScopes(scopeValues).map((scope) => {
    const allowed = grant.find((g) => g.type === scope.type && g.name === scope.name)?.actions ?? [];
    return { type: scope.type, name: scope.name, actions: scope.actions.filter((a) => allowed.includes(a)) };
  });
}

export const invalidCredentials = () =>
  unauthenticated('Registry login needs HTTP Basic credentials with an API key (or a registry refresh token) as the password');
