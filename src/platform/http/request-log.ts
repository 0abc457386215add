import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** A single sign-on callback's authorization code and state are credentials while they last: never logged. */
function withoutSignInSecrets(url: string): string {
  if (!url.includes('/auth/oidc/callback?')) return url;
  return url.replace(/([?&](?:code|state)=)[^&]*/g, '$1[redacted]');
}

/** Levels at which a served request's line (info) is not written. */
const ABOVE_INFO = new Set(['warn', 'error', 'fatal', 'silent']);

/**
 * One structured line per request, written when the answer is sent. Fastify's default writes two
 * (received, completed) with whole request/response objects; on a busy API that serialization and
 * the extra write were a measurable share of a request (bench/README.md). Errors keep Fastify's
 * own lines; the request id stays on every line.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    // Above `info` (LOG_LEVEL=warn) a served request writes nothing: build no line for it (issue 35).
    if (!error && ABOVE_INFO.has(reply.log.level)) return;
    const line = {
      method: request.method,
      // As the client sent it (`/api/v1/...` before the alias was rewritten).
      url: withoutSignInSecrets(request.originalUrl),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ip: request.ip,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }
}
