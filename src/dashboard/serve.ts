import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { programFiles } from '../program-files.js';
import { setPageFallback } from '../platform/http/error-handler.js';

/** Where `vite build` (npm run build / prepare) writes the dashboard. */
export const DASHBOARD_DIST = programFiles.dashboard;

/** No inline script or style, nothing from another origin: the dashboard only talks to its own /v1. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const MISSING_BUILD =
  'The dashboard has not been built: run `npm run build` (npm install runs it through the prepare script), then restart Slipway.';

/**
 * Serves the dashboard at `/`: fingerprinted assets under /assets (immutable), index.html for any
 * other GET that asks for HTML (the single-page app's routes). /v1 and /docs stay the API's.
 */
export async function registerDashboard(app: FastifyInstance, dist = DASHBOARD_DIST): Promise<void> {
  const indexPath = join(dist, 'index.html');
  const built = existsSync(indexPath);
  const indexHtml = built ? readFileSync(indexPath, 'utf8') : undefined;

  if (built) {
    await app.register(fastifyStatic, {
      root: join(dist, 'assets'),
      prefix: '/assets/',
      immutable: true,
      maxAge: '365d',
      index: false,
      wildcard: true,
      // The build writes .br and .gz beside each asset (dashboard/vite.config.ts).
      preCompressed: true,
    });
  }

  const sendIndex = (reply: import('fastify').FastifyReply) => {
    if (!indexHtml) return reply.code(503).type('text/plain; charset=utf-8').send(MISSING_BUILD);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', DASHBOARD_CSP)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .send(indexHtml);
  };

  app.get('/', { schema: { hide: true } }, (_request, reply) => sendIndex(reply));

  // Only requests no route matched get here, so /v1 and /docs keep theirs; anything that is not a
  // page request goes on to the API's ordinary 404/405 handling.
  setPageFallback(app, (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const wantsHtml = (request.headers.accept ?? '').includes('text/html');
    const apiPath = path === '/v1' || path.startsWith('/v1/') || path.startsWith('/docs') || path.startsWith('/assets/');
    if (request.method !== 'GET' || !wantsHtml || apiPath) return false;
    void sendIndex(reply);
    return true;
  });
}
