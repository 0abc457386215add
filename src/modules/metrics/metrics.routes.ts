import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from 'typebox';
import { notFound, unauthenticated } from '../../platform/errors.js';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import type { PlatformMetrics } from './platform-metrics.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * `GET /metrics` in Prometheus text format, for a scraper holding `METRICS_TOKEN` as its bearer
 * token (not a user's credentials: a scraper sees every application's series). Without the
 * setting the endpoint does not exist (404).
 */
/** Counts every request the app answers (register on the root instance: hooks are scoped to their plugin). */
export function countRequests(app: App, metrics: PlatformMetrics) {
  // A callback hook: no promise per request for a synchronous count (issue 35).
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

export function metricsRoutes(metrics: PlatformMetrics, token: string | undefined) {
  return async (app: App) => {
    app.get(
      '/metrics',
      {
        schema: {
          tags: ['Operations'],
          summary: 'Prometheus metrics of the platform and per application (bearer METRICS_TOKEN)',
          security: [{ metricsToken: [] }],
          response: { 200: Type.String({ description: 'Prometheus text exposition format 0.0.4' }), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        if (!token) throw notFound('Route GET:/metrics');
        const given = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
        // Hashes of equal length: the comparison takes the same time whatever was sent.
        if (!timingSafeEqual(digest(given), digest(token)))
          throw unauthenticated('A valid metrics token is required (Authorization: Bearer)');
        reply.type(metrics.registry.contentType);
        return metrics.text();
      },
    );
  };
}
