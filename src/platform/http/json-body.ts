import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

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

/** Route config flag: the route ignores unknown body fields instead of refusing them. */
export const LENIENT_BODY = 'lenientBody';

/**
 * A route without a body schema takes no body: no body or `{}` is fine, anything else
 * (`[]`, `123`, `"text"`, `null`, an object with fields) is refused with 422 before the
 * handler runs, as the routes with a schema refuse unknown fields.
 */
export function refuseUnexpectedBodies(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and most have no body (issue 35).
  app.addHook('preValidation', (request, _reply, done) => {
    const body = request.body;
    // No route matched: the answer is 404 or 405 whatever the body (error-handler.ts).
    // A route that keeps its body raw (a signed webhook) reads it itself.
    if (body === undefined || request.is404 || request.routeOptions.schema?.body !== undefined || Buffer.isBuffer(body)) return done();
    const contentType = request.headers['content-type'] ?? '';
    if (!/^application\/json\b/i.test(contentType)) return done();
    // Routes that ignore unknown fields (Ancla's: src/adapters/ancla/lenient-bodies.ts) take an object with any, and drop them.
    const lenient = Boolean((request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[LENIENT_BODY]);
    if (body !== null && typeof body === 'object' && !Array.isArray(body) && (lenient || Object.keys(body).length === 0)) return done();
    done(new AppError('VALIDATION', 'This route takes no request body: send none, or {}', [{ field: 'body', message: 'must be empty' }]));
  });
}

/**
 * A route whose body schema is an object with no required field takes an optional body: none
 * (or an empty one) reads as `{}` instead of a 422 "body must be object" (e.g. `POST
 * /applications/{id}/rollback`, whose default is the previous release).
 */
export function defaultOptionalBodies(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.is404 || request.body !== undefined) return done();
    const schema = request.routeOptions.schema?.body as { type?: unknown; required?: unknown[] } | undefined;
    if (schema?.type === 'object' && !(Array.isArray(schema.required) && schema.required.length > 0)) request.body = {};
    done();
  });
}
