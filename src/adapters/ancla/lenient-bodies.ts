import type { FastifyRequest } from 'fastify';
import { LENIENT_BODY } from '../../platform/http/json-body.js';
import type { App } from '../../platform/http/types.js';

/**
 * Ancla's clients send fields Slipway does not know (the CLI's build `strategy`, the SDKs'
 * free-form service updates). On the Ancla-shaped routes an unknown top-level field is dropped
 * before validation and named in a `Warning` header (and the debug log), so the call works as
 * the client meant it; a known field with a bad value is still refused. Slipway's own routes
 * stay strict (src/platform/http/json-body.ts, the validator). Applied once to the adapter's
 * whole route scope (wire.ts), so every route registered in it is lenient.
 */
export function lenientBodies(app: App): void {
  // Marks the scope's routes: the app-wide "no body on a body-less route" check lets an object through to this hook.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), [LENIENT_BODY]: true } as typeof route.config;
  });
  app.addHook('preValidation', async (request, reply) => {
    const body = request.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body) || Buffer.isBuffer(body)) return;
    const known = knownFields(request.routeOptions.schema?.body);
    if (known === 'any') return;
    const fields = body as Record<string, unknown>;
    const ignored = Object.keys(fields).filter((name) => !known.has(name));
    if (ignored.length === 0) return;
    for (const name of ignored) delete fields[name];
    reply.header('Warning', `299 - "Ignored unknown fields: ${headerSafe(ignored)}"`);
    logIgnored(request, ignored);
  });
}

type Schema = { type?: unknown; properties?: Record<string, unknown>; additionalProperties?: unknown; anyOf?: Schema[] };

/**
 * The top-level fields a body schema knows, or `any` when it takes any field (or is no object).
 * A route without a body schema knows none: whatever a client sends it is ignored.
 */
function knownFields(schema: unknown): Set<string> | 'any' {
  if (schema === undefined) return new Set();
  const s = schema as Schema;
  if (Array.isArray(s.anyOf)) {
    const names = new Set<string>();
    for (const member of s.anyOf) {
      if (member.type === 'null') continue;
      const known = knownFields(member);
      if (known === 'any') return 'any';
      for (const n of known) names.add(n);
    }
    return names;
  }
  if (s.type !== 'object' || s.additionalProperties !== false) return 'any';
  return new Set(Object.keys(s.properties ?? {}));
}

/** Field names come from the client: only name-like characters, a bounded list, go into the header. */
function headerSafe(names: string[]): string {
  const shown = names.slice(0, 20).map((n) => n.replace(/[^A-Za-z0-9_.-]/g, '?').slice(0, 64));
  return shown.join(', ') + (names.length > shown.length ? `, and ${names.length - shown.length} more` : '');
}

function logIgnored(request: FastifyRequest, ignored: string[]) {
  request.log.debug({ ignored: ignored.slice(0, 20) }, 'ignored unknown body fields (Ancla-shaped route)');
}
