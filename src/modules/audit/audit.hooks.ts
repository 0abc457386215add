import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteHandlerMethod } from 'fastify';
import { resourceOfRoute } from '../../platform/audit/audit-row.js';
import { auditableBody } from '../../platform/audit/redact.js';
import type { DeniedRequests } from '../../platform/audit/denied-requests.js';
import { RequestAudit, runWithAudit, type AuditActor } from '../../platform/audit/request-audit.js';
import type { App } from '../../platform/http/types.js';
import type { AuditService } from './audit.service.js';

const CHANGING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const audits = new WeakMap<FastifyRequest, RequestAudit>();

function actorOf(request: FastifyRequest): AuditActor {
  const principal = request.principal;
  if (principal) {
    return {
      userId: principal.user.id,
      username: principal.user.username,
      credentialKind: principal.via,
      credentialId: principal.credentialId,
    };
  }
  // Public routes that change something are authenticated by a signature (the GitHub hook).
  const signed = Boolean(request.headers['x-hub-signature-256']);
  return { userId: null, username: null, credentialKind: signed ? 'signature' : 'none', credentialId: null };
}

/**
 * Every changing request runs inside its RequestAudit; the auditing database driver writes
 * its row in the transaction of its first write (platform/audit/). Armed once the handler
 * runs (authenticated, valid), closed with the response. The hooks go on the routes that need
 * them (issue 35): a read only has its answer looked at for a refusal (403), without a promise.
 */
export function installAuditHooks(app: App, audit: AuditService, denied: DeniedRequests) {
  const entryOf = (request: FastifyRequest, route: string) =>
    new RequestAudit(
      {
        requestId: String(request.id),
        method: request.method,
        route,
        params: (request.params ?? {}) as Record<string, string>,
        clientAddress: request.ip ?? null,
        peerAddress: request.socket?.remoteAddress ?? null,
        body: undefined,
      },
      () => actorOf(request),
    );
  const begin = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const route = request.routeOptions.url;
    if (!CHANGING_METHODS.has(request.method) || !route) return done();
    const entry = entryOf(request, route);
    audits.set(request, entry);
    runWithAudit(entry, done);
  };
  const arm = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const entry = audits.get(request);
    if (entry) {
      entry.request.body = auditableBody(request.body);
      entry.armed = true;
    }
    done();
  };
  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode === 403 && !request.routeOptions.config?.auditsItself) {
      // Refused: who tried what is recorded (aggregated), with the refusal's message, never the body.
      try {
        const entry = audits.get(request) ?? entryOf(request, request.routeOptions.url ?? request.url.split('?')[0]!);
        entry.close();
        await denied.record(entry, messageOf(payload));
      } catch (err) {
        request.log.warn({ err }, 'auditing a refused request failed');
      }
      return;
    }
    const entry = audits.get(request);
    if (!entry) return;
    entry.close();
    if (entry.rowId !== null && reply.statusCode < 400 && typeof payload === 'string' && payload.startsWith('{')) {
      try {
        const resource = entry.change.resourceType ?? resourceOfRoute(entry.request.route, entry.request.params, entry.request.method).type;
        await audit.complete(entry.rowId, resource, JSON.parse(payload), reply.statusCode === 201);
      } catch (err) {
        request.log.warn({ err }, 'completing the audit entry failed');
      }
    }
  };
  const answered = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: Error | null, payload?: unknown) => void,
  ) => {
    // Most answers: a read that was not refused.
    if (reply.statusCode !== 403 && !audits.has(request)) return done(null, payload);
    record(request, reply, payload).then(
      () => done(null, payload),
      (err: Error) => done(err),
    );
  };
  const end = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const entry = audits.get(request);
    if (entry) entry.close();
    done();
  };
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    route.onSend = [...hooksOf(route.onSend), answered as never];
    if (!methods.some((m) => CHANGING_METHODS.has(m))) return;
    route.onRequest = [...hooksOf(route.onRequest), begin];
    route.preHandler = [...hooksOf(route.preHandler), arm];
    route.onResponse = [...hooksOf(route.onResponse), end];
    route.handler = closedWhenAbandoned(route.handler);
  });
}

/**
 * A hijacked reply (a git push, an attached run) or an aborted request may never reach onSend nor onResponse:
 * once its handler has settled, the request is closed here (its change is made; later work is not its change).
 * Not at the socket's close: a push whose client hung up goes on, and its writes are still its change.
 */
function closedWhenAbandoned(handler: RouteHandlerMethod): RouteHandlerMethod {
  return function (this: FastifyInstance, request, reply) {
    const settled = () => {
      if (reply.sent || request.raw.destroyed) audits.get(request)?.close();
    };
    const result: unknown = handler.call(this, request, reply);
    if (result instanceof Promise) result.then(settled, settled);
    else settled();
    return result;
  } as RouteHandlerMethod;
}

/** A route's own hooks of one kind, as a list (a route may give one function, a list, or none). */
function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

function messageOf(payload: unknown): string {
  if (typeof payload !== 'string') return '';
  try {
    const message = (JSON.parse(payload) as { message?: unknown }).message;
    return typeof message === 'string' ? message : '';
  } catch {
    return '';
  }
}
