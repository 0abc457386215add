import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { fastifyCookie } from '@fastify/cookie';
import { forbidden, unauthenticated } from '../../platform/errors.js';
import type { AuthService } from './auth.service.js';
import type { Principal } from '../../platform/http/types.js';
import type { Db } from '../../platform/db/database.js';
import { checkRouteAccess, isPlainRead } from '../../platform/access/route-access.js';

export const SESSION_COOKIE = 'slipway_session';
export const API_KEY_HEADER = 'x-api-key';

/** Who is calling, from an API key or a session cookie; null when neither is valid. */
export async function identify(auth: AuthService, request: FastifyRequest) {
  const key = request.headers[API_KEY_HEADER];
  if (typeof key === 'string' && key.length > 0) return auth.fromApiKey(key, request.ip ?? null);
  const session = sessionCookie(request);
  if (session) return auth.fromSession(session);
  return null;
}

/**
 * The session cookie, read from the header here: most requests carry an API key and no cookie, so
 * the cookie parser runs only in the scopes of the routes that set cookies (auth, sso), not on every request.
 */
function sessionCookie(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  return (request.cookies ?? fastifyCookie.parse(header))[SESSION_COOKIE];
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a browser sent this request from another origin. SameSite=Lax alone is not enough:
 * applications served by the router under a sibling domain are the *same site* as the API,
 * and a body-less POST (toggle-admin, deploy) needs no CORS preflight. Clients that are not
 * browsers send neither header and are not affected.
 */
function crossOrigin(request: FastifyRequest): boolean {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string') return fetchSite !== 'same-origin' && fetchSite !== 'none';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return false;
  try {
    const from = new URL(origin);
    // Read the Host through the origin's scheme so `host:80` and `host` compare equal.
    return from.host !== new URL(`${from.protocol}//${request.host}`).host;
  } catch {
    return true; // `Origin: null` (sandboxed frames, redirects) or garbage
  }
}

/** Runs before every route: public routes pass, the rest need a valid credential. */
export function authenticationHook(auth: AuthService) {
  const accept = (request: FastifyRequest, principal: Principal) => {
    request.principal = principal;
    // Long-lived responses (event streams) ask again: a revoked credential ends them.
    request.reauthenticate = async () => (await identify(auth, request))?.credentialId === principal.credentialId;
  };
  const verify = async (request: FastifyRequest) => {
    const principal = await identify(auth, request);
    if (!principal) throw unauthenticated();
    // A session cookie rides along on cross-site requests: changes need a same-origin caller.
    if (principal.via === 'session' && !SAFE_METHODS.has(request.method) && crossOrigin(request)) {
      throw forbidden('Cross-origin requests authenticated by the session cookie cannot change anything; use an API key');
    }
    accept(request, principal);
  };
  // A callback hook: a key verified in the last few seconds (most requests) passes without a promise (issue 35).
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (request.routeOptions.config?.public) return done();
    if (!request.routeOptions.url) return done(); // unknown route: let the 404/405 handler answer
    const key = request.headers[API_KEY_HEADER];
    const known = typeof key === 'string' && key.length > 0 ? auth.knownApiKey(key) : undefined;
    if (known) {
      accept(request, known);
      return done();
    }
    verify(request).then(() => done(), done);
  };
}

/**
 * Runs before every route's validation (its body parsed, so the identifiers it carries are
 * known, and a refusal comes before any complaint about the body): the caller's role in the
 * organization the request acts in, and a scoped API key's limits, against the one table of
 * what each route needs (platform/access/route-actions.ts, route-access.ts). Refusals are 403
 * with the reason (the audit hooks record them).
 */
export function keyScopeHook(db: Db) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const principal = request.principal;
    const url = request.routeOptions.url;
    // Most requests: a read any member may make, with a credential without limits (nothing to look up).
    if (!principal || !url || (!principal.scope && isPlainRead(request.method, url))) return done();
    checkRouteAccess(db, principal, {
      method: request.method,
      url,
      params: (request.params ?? {}) as Record<string, unknown>,
      query: (request.query ?? {}) as Record<string, unknown>,
      body:
        request.body && typeof request.body === 'object' && !Array.isArray(request.body) ? (request.body as Record<string, unknown>) : {},
    }).then((refusal) => done(refusal ?? undefined), done);
  };
}
