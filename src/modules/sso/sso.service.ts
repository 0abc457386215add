import { timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../platform/context.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, conflict, invalid, isUniqueViolation, notFound } from '../../platform/errors.js';
import { hashToken } from '../../platform/crypto/tokens.js';
import { iso } from '../../platform/http/schemas.js';
import type { AuditActor } from '../../platform/audit/request-audit.js';
import { insertExternalUser } from '../users/index.js';
import { openSession } from '../auth/index.js';
import {
  grantRole,
  withdrawUngrantedRoles,
  ORGANIZATION_ROLES,
  type OrganizationRole,
  type OrganizationAccess,
} from '../organizations/index.js';
import { describe, OidcClients, openidClient, providerUnavailable } from './oidc-client.js';
import type { SsoRepository } from './sso.repository.js';

/** How long a started sign-in waits for the identity provider to send the browser back. */
const SIGN_IN_MINUTES = 10;
const BASE_SCOPES = ['openid', 'email', 'profile'];

type IssuerRow = Awaited<ReturnType<SsoRepository['listIssuers']>>[number];

const toIssuer = (row: IssuerRow) => ({
  name: row.name,
  display_name: row.display_name,
  discovery_url: row.discovery_url,
  client_id: row.client_id,
  allowed_email_domains: row.allowed_email_domains,
  group_claim: row.group_claim,
  extra_scopes: row.extra_scopes,
  created: iso(row.created_at),
  updated: iso(row.updated_at),
});

export interface NewIssuer {
  name: string;
  display_name: string;
  discovery_url: string;
  client_id: string;
  client_secret: string;
  allowed_email_domains?: string[];
  group_claim?: string | null;
  extra_scopes?: string[];
}

/** What a finished sign-in hands the route: the session's cookie and where the browser goes next. */
export interface SignedIn {
  token: string;
  expires: Date;
  returnTo: string;
}

/** Where a refused sign-in stood, for its audit row. */
export interface SignInAttempt {
  issuer: string | null;
  actor?: AuditActor;
  /** The browser's address and user agent, remembered with the session. */
  address?: string | null;
  userAgent?: string | null;
}

/** Only a path of this site: a sign-in never sends the browser elsewhere (an open redirect otherwise). */
export function safeReturnPath(value: string | undefined): string {
  if (!value || value.length > 2000 || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  // A control character or a backslash: browsers read `/\evil` as `//evil`, and a newline splits headers.
  if ([...value].some((c) => c.charCodeAt(0) < 0x20 || c === '\\')) return '/';
  return value;
}

function sameSecret(a: string, b: string) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const refused = (message: string) => new AppError('FORBIDDEN', message);
const badState = (message: string) => new AppError('BAD_REQUEST', message);
const notVouched = (message: string) => new AppError('UNAUTHENTICATED', message);

/**
 * Single sign-on through OpenID Connect issuers the operator configures: the authorization code
 * flow with PKCE, state bound to the browser by a cookie, nonce checked in the ID token (and its
 * issuer, audience, signature and lifetime, by openid-client). A person is created at their first
 * sign-in; a group their issuer names grants the mapped role on an organization at each sign-in.
 */
export class SsoService {
  constructor(
    private readonly ctx: AppContext,
    private readonly repo: SsoRepository,
    private readonly clients: OidcClients,
    private readonly access: OrganizationAccess,
    private readonly settings: { callbackUrl: string; sessionTtlHours: number },
  ) {}

  get callbackUrl() {
    return this.settings.callbackUrl;
  }

  /** The login page's choices (public). */
  async methods() {
    const issuers = await this.repo.listIssuers();
    return {
      password: this.ctx.config.PASSWORD_LOGIN,
      oidc: issuers.map((i) => ({ name: i.name, display_name: i.display_name, start: `/v1/auth/oidc/${i.name}/start` })),
    };
  }

  async listIssuers() {
    return (await this.repo.listIssuers()).map(toIssuer);
  }

  async createIssuer(input: NewIssuer) {
    let url: URL;
    try {
      url = new URL(input.discovery_url);
    } catch {
      throw invalid('discovery_url', 'must be an absolute URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('discovery_url', 'must be an http(s) URL');
    const domains = [...new Set((input.allowed_email_domains ?? []).map((d) => d.trim().toLowerCase()).filter(Boolean))];
    try {
      const row = await this.repo.insertIssuer({
        name: input.name,
        display_name: input.display_name,
        discovery_url: url.toString(),
        client_id: input.client_id,
        client_secret_sealed: this.ctx.secrets.seal(input.client_secret),
        allowed_email_domains: domains,
        group_claim: input.group_claim ?? null,
        extra_scopes: input.extra_scopes ?? [],
      });
      return toIssuer(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`An issuer named ${input.name} exists already`);
      throw err;
    }
  }

  async deleteIssuer(name: string) {
    const issuer = await this.repo.findIssuerWithSecret(name);
    if (!issuer || !(await this.repo.deleteIssuer(name))) throw notFound(`Issuer '${name}'`);
    this.clients.forget(issuer.id);
  }

  private async issuer(name: string) {
    const issuer = await this.repo.findIssuerWithSecret(name);
    if (!issuer) throw notFound(`Issuer '${name}'`);
    return issuer;
  }

  async listGroupMappings(name: string) {
    const issuer = await this.issuer(name);
    return (await this.repo.listGroupMappings(issuer.id)).map((m) => ({
      id: m.id,
      group: m.group_value,
      organization: m.organization,
      role: m.role,
      created: iso(m.created_at),
    }));
  }

  async addGroupMapping(name: string, input: { group: string; organization: string; role: string }) {
    const issuer = await this.issuer(name);
    if (!(ORGANIZATION_ROLES as readonly string[]).includes(input.role))
      throw invalid('role', `must be one of ${ORGANIZATION_ROLES.join(', ')}`);
    const org = await this.access.findBySlug(input.organization);
    if (!org) throw notFound(`Organization '${input.organization}'`);
    try {
      await this.repo.insertGroupMapping({ issuer_id: issuer.id, group_value: input.group, organization_id: org.id, role: input.role });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`Group ${input.group} is mapped on ${input.organization} already`);
      throw err;
    }
    return (await this.listGroupMappings(name)).find((m) => m.group === input.group && m.organization === org.slug)!;
  }

  async deleteGroupMapping(name: string, id: string) {
    const issuer = await this.issuer(name);
    if (!(await this.repo.deleteGroupMapping(issuer.id, id))) throw notFound('Group mapping');
  }

  private settingsOf(issuer: NonNullable<Awaited<ReturnType<SsoRepository['findIssuerWithSecret']>>>) {
    return {
      id: issuer.id,
      discoveryUrl: issuer.discovery_url,
      clientId: issuer.client_id,
      clientSecret: this.ctx.secrets.open(issuer.client_secret_sealed),
      updatedAt: issuer.updated_at,
    };
  }

  /**
   * Starts a sign-in: remembers its state (hashed), nonce and PKCE verifier (sealed) for a few
   * minutes and answers the issuer's authorization URL and the state the browser keeps in a cookie.
   */
  async start(name: string, returnTo: string | undefined): Promise<{ url: string; state: string }> {
    const issuer = await this.issuer(name);
    const config = await this.clients.configuration(this.settingsOf(issuer));
    const client = await openidClient();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const verifier = client.randomPKCECodeVerifier();
    await this.repo.insertSignIn({
      state_hash: hashToken(`oidc-state:${state}`),
      issuer_id: issuer.id,
      nonce,
      code_verifier_sealed: this.ctx.secrets.seal(verifier),
      return_to: safeReturnPath(returnTo),
      expires_at: new Date(Date.now() + SIGN_IN_MINUTES * 60_000),
    });
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.callbackUrl,
      scope: [...new Set([...BASE_SCOPES, ...issuer.extra_scopes])].join(' '),
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.toString(), state };
  }

  /**
   * Finishes a sign-in from the issuer's redirect: the state must be this browser's and unspent,
   * the code's ID token must pass every check, the e-mail must be allowed. Then, in one
   * transaction: the user (found by the issuer's subject, else by a verified e-mail, else created),
   * the roles their groups grant, the session and the audit row (method `oidc`).
   */
  async finish(
    query: Record<string, string | undefined>,
    browserState: string | undefined,
    attempt: SignInAttempt,
    audit: (db: Db, entry: { actor: AuditActor; organizations: string[]; withdrawn: string[]; newUser: boolean }) => Promise<void>,
  ): Promise<SignedIn> {
    const state = query.state;
    if (!state || !browserState || !sameSecret(state, browserState))
      throw badState('The sign-in state does not match the one this browser started with: start the sign-in again');
    const pending = await this.repo.takeSignIn(hashToken(`oidc-state:${state}`));
    if (!pending) throw badState('This sign-in is unknown, used or expired: start the sign-in again');
    const issuer = await this.repo.findIssuerById(pending.issuer_id);
    if (!issuer) throw badState('The issuer of this sign-in was removed');
    attempt.issuer = issuer.name;
    if (query.error)
      throw notVouched(
        `${issuer.display_name} refused the sign-in: ${query.error}${query.error_description ? `: ${query.error_description}` : ''}`,
      );
    const config = await this.clients.configuration(this.settingsOf(issuer));
    const client = await openidClient();

    const current = new URL(this.settings.callbackUrl);
    for (const [key, value] of Object.entries(query)) if (value !== undefined) current.searchParams.set(key, value);
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: this.ctx.secrets.open(pending.code_verifier_sealed),
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      if (unreachable(err)) throw providerUnavailable(`its token endpoint failed (${describe(err)})`);
      throw notVouched(`${issuer.display_name}'s answer failed validation: ${describe(err)}`);
    }
    const claims = tokens.claims();
    if (!claims) throw notVouched(`${issuer.display_name} sent no ID token`);
    const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
    if (!email || !/^[^@\s]+@[^@\s]+$/.test(email))
      throw refused(`${issuer.display_name} did not vouch for an e-mail address: ask for the email scope`);
    if (claims.email_verified === false) throw refused(`${issuer.display_name} has not verified ${email}`);
    const domain = email.split('@')[1]!;
    if (issuer.allowed_email_domains.length > 0 && !issuer.allowed_email_domains.includes(domain))
      throw refused(`E-mail addresses of ${domain} may not sign in through ${issuer.display_name}`);
    const groups = groupsOf(issuer.group_claim ? claims[issuer.group_claim] : undefined);
    const subject = claims.sub;
    const preferred = typeof claims.preferred_username === 'string' ? claims.preferred_username : email.split('@')[0]!;

    return this.ctx.db.transaction().execute(async (trx) => {
      let newUser = false;
      let user = await this.repo.findIdentity(trx, issuer.id, subject);
      if (!user) {
        const existing = await this.repo.findUserByEmail(trx, email);
        if (existing && claims.email_verified !== true)
          throw conflict(
            `An account with ${email} exists, and ${issuer.display_name} does not say it verified that address: ask an administrator`,
          );
        user = existing ?? (await insertExternalUser(trx, { email, preferredUsername: preferred }));
        newUser = !existing;
      }
      await this.repo.linkIdentity(trx, issuer.id, subject, user.id);
      const granted: string[] = [];
      const mappings = await this.repo.mappingsForGroups(trx, issuer.id, groups);
      for (const mapping of mappings) {
        await grantRole(trx, mapping.organization_id, user.id, mapping.role as OrganizationRole, issuer.id);
        granted.push(`${mapping.group_value}:${mapping.role}`);
      }
      const withdrawn = await withdrawUngrantedRoles(trx, issuer.id, user.id, mappings);
      const session = await openSession(trx, user.id, this.settings.sessionTtlHours, {
        method: 'oidc',
        address: attempt.address ?? null,
        userAgent: attempt.userAgent ?? null,
      });
      const actor: AuditActor = { userId: user.id, username: user.username, credentialKind: 'oidc', credentialId: session.id };
      attempt.actor = actor;
      await audit(trx, { actor, organizations: granted, withdrawn, newUser });
      return { token: session.token, expires: session.expires, returnTo: pending.return_to };
    });
  }

  /** Sign-ins never finished: swept with the other expired credentials. */
  pruneExpired() {
    return this.repo.deleteExpiredSignIns();
  }
}

/** The provider did not answer (refused, timed out, DNS): not a verdict on the person. */
function unreachable(err: unknown) {
  const e = err as { name?: string; cause?: { code?: string; name?: string } };
  const code = e?.cause?.code ?? '';
  return (
    e?.name === 'AbortError' ||
    e?.name === 'TimeoutError' ||
    (e instanceof TypeError && e.message === 'fetch failed') ||
    /^(E[A-Z]+|UND_ERR)/.test(code)
  );
}

/** A group claim's value: a list of names, or one name. */
function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string').slice(0, 1000);
  return [];
}
