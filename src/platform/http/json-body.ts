import type { FastifyInstance } from 'fastify';

/**
 * Fastify's own JSON parser (prototype-poisoning checks included), except that an empty
 * body reads as "no body" instead of a 400: many clients send `Content-Type:
 * application/json` on every request, including body-less POSTs like `toggle-admin` or
 * `logout`. A route that needs a body still refuses the missing one (422).
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === '') return done(null, undefined);
    return parse(request, text, done);
  });
}
