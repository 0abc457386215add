import type { IncomingMessage } from 'node:http';

/**
 * The other spellings of the API's paths that clients use, answered as the canonical one
 * (docs/api-decisions.md, "Errors and HTTP behaviour"). Ancla's clients call `{base}/api/v1/...`
 * and put a trailing slash on collections; both are answered in place, never redirected (a
 * redirected POST loses its body in many clients), and the OpenAPI document lists each
 * operation once, at `/v1/...` without the slash.
 */

/** Where the aliased API lives; `/api/v1/x` is served as `/v1/x`. */
const API_ALIAS = '/api/v1';

/**
 * Router options shared by Fastify's router and the one that tells 405 from 404
 * (error-handler.ts): `/v1/workspaces/` finds `/v1/workspaces`, and `/v2/`-style routes
 * registered with their slash are still found with or without it.
 */
export const ROUTER_OPTIONS = { ignoreTrailingSlash: true } as const;

/**
 * Fastify's `rewriteUrl`: the alias prefix becomes `/v1` before routing, so the request runs
 * the canonical route with its hooks, schema, audit entry and metrics label (`request.originalUrl`
 * keeps what the client sent). Anything else is left as it came.
 */
export function rewriteApiAlias(request: IncomingMessage): string {
  const url = request.url ?? '/';
  if (!url.startsWith(API_ALIAS)) return url;
  const next = url.charAt(API_ALIAS.length);
  // `/api/v1`, `/api/v1/...`, `/api/v1?...`; not `/api/v10` or `/api/v1x`.
  if (next === '' || next === '/' || next === '?') return url.slice('/api'.length);
  return url;
}
