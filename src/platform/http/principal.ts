import type { FastifyRequest } from 'fastify';
import { forbidden, unauthenticated } from '../errors.js';
import type { AuthenticatedUser } from './types.js';

export function currentUser(request: FastifyRequest): AuthenticatedUser {
  if (!request.principal) throw unauthenticated();
  return request.principal.user;
}

export function requireSiteAdmin(request: FastifyRequest): AuthenticatedUser {
  const user = currentUser(request);
  if (!user.is_admin) throw forbidden('Only site administrators can do this');
  return user;
}
