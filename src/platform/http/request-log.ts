import type { FastifyInstance } from 'fastify';

/**
 * One structured line per request, written when the answer is sent. Fastify's own request
 * logging writes two (received, completed) with full request/response objects; on a busy API
 * that serialization and the extra write are a measurable share of a request (bench/README.md).
 * The app is built with `disableRequestLogging: true`; the request id stays on every line.
 */
export function installRequestLog(app: FastifyInstance) {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10, ip: request.ip },
      'request',
    );
    done();
  });
}
