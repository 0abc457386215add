import cookie from '@fastify/cookie';
import { Type } from 'typebox';
import { commonErrorResponses, IdParam, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { requireSiteAdmin } from '../../platform/http/principal.js';
import { AppError } from '../../platform/errors.js';
import type { Db } from '../../platform/db/database.js';
import { SESSION_COOKIE } from '../auth/index.js';
import { auditSignIn } from './sign-in-audit.js';
import { AuthMethods, CreateGroupMappingBody, CreateOidcIssuerBody, GroupMapping, IssuerParams, OidcIssuer } from './sso.schemas.js';
import type { SignInAttempt, SsoService } from './sso.service.js';

/** The browser's half of a sign-in's state: only the browser that started a sign-in finishes it. */
const STATE_COOKIE = 'slipway_oidc_state';
const STATE_COOKIE_PATH = '/v1/auth/oidc';

/** A failed step is audited (with its reason) before its error answers. */
async function auditedFailure(db: Db, request: Parameters<typeof auditSignIn>[1], attempt: SignInAttempt, err: unknown): Promise<never> {
  const status = err instanceof AppError ? err.status : 500;
  try {
    await auditSignIn(db, request, {
      actor: attempt.actor,
      issuer: attempt.issuer,
      status,
      reason: err instanceof AppError ? err.message : 'internal error',
    });
  } catch (auditErr) {
    request.log.warn({ err: auditErr }, 'auditing a refused sign-in failed');
  }
  throw err;
}

export function ssoRoutes(sso: SsoService, db: Db) {
  return async (app: App) => {
    // The sign-in's state cookie and the session it ends with: the cookie parser in this scope only.
    await app.register(cookie);
    app.get(
      '/auth/methods',
      {
        config: { public: true },
        schema: {
          tags: ['Authentication'],
          summary: 'How people sign in here: password, and the single sign-on issuers',
          response: { 200: AuthMethods },
        },
      },
      async () => sso.methods(),
    );

    app.get(
      '/auth/oidc/:issuer/start',
      {
        config: { public: true, auditsItself: true, rateLimit: { max: 60, timeWindow: '1 minute' } },
        schema: {
          tags: ['Authentication'],
          summary: 'Sign in through an OpenID Connect issuer: redirects the browser to it',
          description:
            'Authorization code flow with PKCE; the state is also set in a cookie so only this browser finishes the sign-in. ' +
            '`return_to` (a path of this site) is where the browser lands once signed in, e.g. `/cli-auth?code=…&port=…`.',
          params: IssuerParams,
          querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2000 })) }),
          response: { 302: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const attempt: SignInAttempt = { issuer: request.params.issuer };
        try {
          const { url, state } = await sso.start(request.params.issuer, request.query.return_to);
          reply.setCookie(STATE_COOKIE, state, { path: STATE_COOKIE_PATH, httpOnly: true, sameSite: 'lax', secure: 'auto', maxAge: 600 });
          return reply.redirect(url, 302);
        } catch (err) {
          return auditedFailure(db, request, attempt, err);
        }
      },
    );

    app.get(
      '/auth/oidc/callback',
      {
        config: { public: true, auditsItself: true, rateLimit: { max: 60, timeWindow: '1 minute' } },
        schema: {
          tags: ['Authentication'],
          summary: "The issuers' redirect back: checks the answer, signs in (session cookie) and redirects to `return_to`",
          description:
            'Register `DASHBOARD_URL/v1/auth/oidc/callback` as the redirect URI at the issuer. A tampered or replayed state is 400, ' +
            'a token that fails its checks (audience, nonce, signature) 401, an e-mail the issuer settings do not allow 403, ' +
            'an issuer that cannot be reached 424; each is audited and creates nothing.',
          querystring: Type.Object(
            {
              state: Type.Optional(Type.String({ maxLength: 500 })),
              code: Type.Optional(Type.String({ maxLength: 4000 })),
              error: Type.Optional(Type.String({ maxLength: 200 })),
              error_description: Type.Optional(Type.String({ maxLength: 1000 })),
              iss: Type.Optional(Type.String({ maxLength: 2000 })),
            },
            { additionalProperties: Type.String({ maxLength: 2000 }) },
          ),
          response: { 302: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const attempt: SignInAttempt = { issuer: null, address: request.ip ?? null, userAgent: request.headers['user-agent'] ?? null };
        try {
          const signedIn = await sso.finish(
            request.query as Record<string, string | undefined>,
            request.cookies[STATE_COOKIE],
            attempt,
            (trx, entry) => auditSignIn(trx, request, { ...entry, issuer: attempt.issuer, status: 302 }),
          );
          reply.clearCookie(STATE_COOKIE, { path: STATE_COOKIE_PATH });
          reply.setCookie(SESSION_COOKIE, signedIn.token, {
            path: '/',
            httpOnly: true,
            sameSite: 'lax',
            secure: 'auto',
            expires: signedIn.expires,
          });
          return reply.redirect(signedIn.returnTo, 302);
        } catch (err) {
          reply.clearCookie(STATE_COOKIE, { path: STATE_COOKIE_PATH });
          return auditedFailure(db, request, attempt, err);
        }
      },
    );

    app.get(
      '/sso/issuers',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: 'OpenID Connect issuers (site admins)',
          response: { 200: Type.Array(OidcIssuer), ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return sso.listIssuers();
      },
    );

    app.post(
      '/sso/issuers',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: 'Add an OpenID Connect issuer (site admins); its client secret is sealed and never shown again',
          body: CreateOidcIssuerBody,
          response: { 201: OidcIssuer, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        requireSiteAdmin(request);
        return reply.code(201).send(await sso.createIssuer(request.body));
      },
    );

    app.delete(
      '/sso/issuers/:issuer',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: 'Remove an issuer (site admins); its people keep their accounts',
          params: IssuerParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        await sso.deleteIssuer(request.params.issuer);
        return { ok: true };
      },
    );

    app.get(
      '/sso/issuers/:issuer/group-mappings',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: "An issuer's group mappings (site admins)",
          params: IssuerParams,
          response: { 200: Type.Array(GroupMapping), ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        return sso.listGroupMappings(request.params.issuer);
      },
    );

    app.post(
      '/sso/issuers/:issuer/group-mappings',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: "Map a value of the issuer's group claim to a role on an organization, granted at each sign-in (site admins)",
          params: IssuerParams,
          body: CreateGroupMappingBody,
          response: { 201: GroupMapping, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        requireSiteAdmin(request);
        return reply.code(201).send(await sso.addGroupMapping(request.params.issuer, request.body));
      },
    );

    app.delete(
      '/sso/issuers/:issuer/group-mappings/:mapping_id',
      {
        schema: {
          tags: ['Single sign-on'],
          summary: 'Remove a group mapping (site admins); memberships it granted stay',
          params: Type.Object({ issuer: IssuerParams.properties.issuer, mapping_id: IdParam }),
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) => {
        requireSiteAdmin(request);
        await sso.deleteGroupMapping(request.params.issuer, request.params.mapping_id);
        return { ok: true };
      },
    );
  };
}
