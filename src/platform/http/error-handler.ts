import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { countDiskFull, isDiskFull } from '../storage/disk-space.js';
import FindMyWay from 'find-my-way';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../db/availability.js';
import { AppError, databaseUnavailable, ERROR_KINDS, type FieldError } from '../errors.js';
import { ROUTER_OPTIONS } from './api-aliases.js';

export { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../db/availability.js';

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Fastify's own error codes, mapped onto our registry. */
const FASTIFY_CODES: Record<string, keyof typeof ERROR_KINDS> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_REQUEST',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_TYPE: 'BAD_REQUEST',
};

function send(reply: FastifyReply, status: number, message: string, errors?: FieldError[]) {
  return (
    reply
      .code(status)
      .type('application/json; charset=utf-8')
      // The dashboard shows it beside the error, so a report names the server's log line.
      .header('x-request-id', String(reply.request.id))
      .send(errors ? { status, message, errors } : { status, message })
  );
}

function sendError(reply: FastifyReply, err: AppError) {
  return send(reply, err.status, err.message, err.errors);
}

function validationErrors(err: FastifyError): FieldError[] {
  return (err.validation ?? []).map((v) => {
    const params = v.params as { additionalProperty?: string; missingProperty?: string };
    const path = (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    const field = params.missingProperty ?? params.additionalProperty ?? path;
    const message = params.additionalProperty ? 'is not an allowed field' : (v.message ?? 'is invalid');
    return {
      field:
        [path, field]
          .filter(Boolean)
          .join('.')
          .replace(/^(.+)\.\1$/, '$1') ||
        (err.validationContext ?? 'body'),
      message,
    };
  });
}

/**
 * Errors Fastify raises before routing (`frameworkErrors`): a path that does not decode
 * (`%ff`) or a path parameter over `maxParamLength`, answered in our shape too.
 */
export function frameworkErrorHandler(err: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return send(reply, ERROR_KINDS.URI_TOO_LONG, 'A path parameter is too long');
  if (err.code === 'FST_ERR_BAD_URL')
    return send(reply, ERROR_KINDS.BAD_REQUEST, 'The request path is not a valid URL (bad percent-encoding)');
  return send(reply, ERROR_KINDS.BAD_REQUEST, 'Bad request');
}

/**
 * Every error leaves as `{status, message}`. Known kinds keep their message; anything
 * else is a bug: logged with its stack, answered as a bare 500 with nothing leaked.
 */
/** Answers a request no route matched with a page (the dashboard's routes); false when it is not one. */
export type PageFallback = (request: FastifyRequest, reply: FastifyReply) => boolean;
const pageFallbacks = new WeakMap<object, PageFallback>();

/**
 * Lets unmatched GETs that ask for HTML reach a single-page app. It sits in the not-found handler
 * rather than in a wildcard route so that the router's own refusals (a too-long path parameter: 414)
 * and 405s stay as they are.
 */
export function setPageFallback(app: object, fallback: PageFallback): void {
  pageFallbacks.set(app, fallback);
}

/**
 * Asked before a body's validation error is answered: throws (403/404) when the caller may not
 * touch the resource the path names, so a stranger learns nothing from a body's shape and gets
 * the answer every other route gives strangers. Costs nothing on valid requests.
 */
export type AccessGate = (request: FastifyRequest) => Promise<void>;
const accessGates = new WeakMap<object, AccessGate>();

export function setAccessGate(app: object, gate: AccessGate): void {
  accessGates.set(app, gate);
}

export function installErrorHandling(app: FastifyInstance): void {
  // A second router holding every route, so an unmatched request can tell 405 from 404. Built on the first
  // unmatched request, not at start: compiling ~300 routes twice was a tenth of the app's build.
  const routes: [method: string, url: string][] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods) if (m !== 'HEAD' && m !== 'OPTIONS') routes.push([m, route.url]);
  });
  let known: ReturnType<typeof FindMyWay> | undefined;
  const knownRoutes = () => {
    if (known) return known;
    known = FindMyWay({ ...ROUTER_OPTIONS });
    for (const [method, url] of routes) known.on(method as 'GET', url, () => {});
    return known;
  };

  /**
   * A request no route matched: 405 with `Allow` when its path takes other methods, else 404.
   * Decided by path and method alone, whatever the body: the not-found route still parses and
   * checks a body, and a bad one must not turn "no such route" into a 400, 415 or 422.
   */
  const answerUnmatched = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    // The path as the client wrote it (`/api/v1/...` before the alias was rewritten).
    const shown = request.originalUrl.split('?')[0] ?? path;
    const allowed = HTTP_METHODS.filter((m) => m !== request.method && knownRoutes().find(m, path));
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(reply, new AppError('METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed on ${shown}`));
    }
    return sendError(reply, new AppError('NOT_FOUND', `Route ${request.method} ${shown} not found`));
  };

  app.setErrorHandler(async (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (request.is404) return answerUnmatched(request, reply);
    const gate = accessGates.get(app);
    if (err.validation && err.validationContext !== 'params' && gate) {
      try {
        await gate(request);
      } catch (denied) {
        if (denied instanceof AppError) return send(reply, denied.status, denied.message);
        throw denied;
      }
    }
    if (err instanceof AppError) {
      if (err.kind === 'DATABASE_UNAVAILABLE') reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return send(reply, err.status, err.message, err.errors);
    }
    // A path parameter that cannot name anything (malformed id or slug) names nothing: 404.
    if (err.validation && err.validationContext === 'params') {
      const field = validationErrors(err)[0]?.field ?? 'resource';
      return send(reply, 404, `${field} not found`);
    }
    if (err.validation) {
      const errors = validationErrors(err);
      const where = err.validationContext ?? 'body';
      const summary = errors.map((e) => `${e.field} ${e.message}`).join('; ');
      return send(reply, 422, `Invalid ${where}: ${summary}`, errors);
    }
    const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (mapped) return send(reply, ERROR_KINDS[mapped], err.message);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return send(reply, err.statusCode, err.message);
    if (isDatabaseUnavailable(err)) {
      // Not a bug: the pool reconnects on its own once PostgreSQL is back, so the client may simply retry.
      request.log.warn({ err: { message: err.message, code: err.code } }, 'database unavailable');
      const unavailable = databaseUnavailable();
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return send(reply, unavailable.status, unavailable.message);
    }
    if (isDiskFull(err)) {
      // Not a bug either: the write was refused whole (PostgreSQL rolls it back), reads keep answering.
      countDiskFull('api');
      request.log.warn({ err: { message: err.message, code: err.code } }, 'disk full');
      return send(
        reply,
        ERROR_KINDS.INSUFFICIENT_STORAGE,
        "The platform's disk is full; the change was not made. Retry once space is freed",
      );
    }
    request.log.error({ err }, 'unhandled error');
    return send(reply, 500, 'Internal server error');
  });

  app.setNotFoundHandler((request, reply) => {
    const page = pageFallbacks.get(app);
    if (page && page(request, reply)) return reply;
    return answerUnmatched(request, reply);
  });
}
