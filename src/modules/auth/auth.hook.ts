import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthenticated } from '../../platform/errors.js';
import type { AuthService } from './auth.service.js';

export const SESSION_COOKIE = 'slipway_session';
export const API_KEY_HEADER = 'x-api-key';

/** Who is calling, from an API key or a session cookie; null when neither is valid. */
export async function identify(auth: AuthService, request: FastifyRequest) {
  const key = request.headers[API_KEY_HEADER];
  if (typeof key === 'string' && key.length > 0) return auth.fromApiKey(key);
  const session = request.cookies?.[SESSION_COOKIE];
  if (session) return auth.fromSession(session);
  return null;
}

/** Runs before every route: public routes pass, the rest need a valid credential. */
export function authenticationHook(auth: AuthService) {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    if (request.routeOptions.config?.public) return;
    if (!request.routeOptions.url) return; // unknown route: let the 404/405 handler answer
    const principal = await identify(auth, request);
    if (!principal) throw unauthenticated();
    request.principal = principal;
  };
}
