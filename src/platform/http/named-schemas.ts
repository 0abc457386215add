import { isDeepStrictEqual } from 'node:util';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';

/**
 * Every TypeBox schema given an `$id` (`{ $id: 'ApplicationSummary' }`) is a named component of the
 * OpenAPI document (`#/components/schemas/ApplicationSummary`), referenced wherever a route uses it,
 * so the generated client types carry its name instead of an inlined copy or `def-N`.
 *
 * Routes keep their schemas inline (TypeBox infers handler types from them, and validation and
 * serialization stay as they were); only the document's copy of a route schema is rewritten.
 */

type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null;
const namedId = (value: JsonObject): string | undefined =>
  typeof value.$id === 'string' && !value.$id.startsWith('#') ? value.$id : undefined;

/**
 * The named schemas inside `schema`, outermost first, leaving out objects in `walked` (whose named schemas were
 * found before: routes share most of their schema constants, so each is walked once, not once per route).
 */
function namedSchemas(schema: unknown, walked: WeakSet<object>, found: JsonObject[] = []): JsonObject[] {
  if (!isObject(schema) || walked.has(schema)) return found;
  walked.add(schema);
  if (Array.isArray(schema)) for (const item of schema) namedSchemas(item, walked, found);
  else {
    if (namedId(schema)) found.push(schema);
    for (const value of Object.values(schema)) namedSchemas(value, walked, found);
  }
  return found;
}

/** A copy of `schema` where each named schema is a reference to the shared one (`{ $ref: 'Id#' }`). */
function referenceNamed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(referenceNamed);
  if (!isObject(schema)) return schema;
  const id = namedId(schema);
  if (id) return { $ref: `${id}#` };
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, referenceNamed(value)]));
}

/** The parts of a route schema the document describes as data: bodies in, bodies out. */
const DOCUMENTED_PARTS = ['body', 'response'] as const;

/**
 * Registers (`addSchema`) every named schema the routes use, as they are added, with the named
 * schemas inside it as references (a schema holds each `$id` once): the document's references
 * resolve to them. Two different schemas under one name fail at start.
 *
 * They go to a context of their own, with no routes: `@fastify/swagger` reads the schemas of every
 * context, while a schema added to a context with routes would replace its validator compiler
 * (Fastify builds a default one for a context whose schemas changed) and feed its serializers.
 * Call after registering `@fastify/swagger` and before any route.
 */
export async function shareNamedSchemas(app: FastifyInstance): Promise<void> {
  let store: FastifyInstance | undefined;
  await app.register(async (context) => {
    store = context;
  });
  // Schema objects already walked (most routes share the same constants): their named schemas are registered.
  const walked = new WeakSet<object>();
  app.addHook('onRoute', (route) => {
    const schema = route.schema as JsonObject | undefined;
    if (!schema || !store) return;
    for (const part of DOCUMENTED_PARTS) {
      for (const named of namedSchemas(schema[part], walked)) {
        const id = namedId(named)!;
        const shared = { ...named, ...(referenceNamed({ ...named, $id: undefined }) as JsonObject), $id: id };
        const known = store.getSchema(id);
        if (known === undefined) store.addSchema(shared);
        else if (!isDeepStrictEqual(known, shared)) throw new Error(`Two different schemas are named ${id} (route ${route.url})`);
      }
    }
  });
}

const ERROR_RESPONSE = 'Error';

/** An error response exactly as the resolver emits it from a `{ $ref: 'Error#' }` schema (with the first one's description). */
function isSharedErrorResponse(response: unknown, first: unknown): boolean {
  if (!isObject(response) || !isObject(response.content)) return false;
  if (isObject(first) && first.description !== response.description) return false;
  const media = Object.values(response.content);
  return (
    Object.keys(response).every((key) => key === 'description' || key === 'content') &&
    media.length > 0 &&
    media.every(
      (m) => isObject(m) && Object.keys(m).length === 1 && isObject(m.schema) && m.schema.$ref === `#/components/schemas/${ERROR_RESPONSE}`,
    )
  );
}

/**
 * The `@fastify/swagger` options that name components after their `$id` and reference them; the
 * error every route may answer is one shared response (`#/components/responses/Error`).
 */
export const namedSchemaOptions: Pick<FastifyDynamicSwaggerOptions, 'refResolver' | 'transform' | 'transformObject'> = {
  refResolver: {
    buildLocalReference: (json, _baseUri, _fragment, i) => namedId(json) ?? `def-${i}`,
  },
  transform: ({ schema, url }) => {
    const copy: JsonObject = { ...schema };
    for (const part of DOCUMENTED_PARTS) if (part in copy) copy[part] = referenceNamed(copy[part]);
    return { schema: copy as FastifySchema, url };
  },
  transformObject: (document) => {
    const openapiObject = ('openapiObject' in document ? document.openapiObject : document.swaggerObject) as JsonObject;
    const paths = (openapiObject.paths ?? {}) as Record<string, Record<string, JsonObject>>;
    let shared: unknown;
    for (const operations of Object.values(paths)) {
      for (const operation of Object.values(operations)) {
        const responses = isObject(operation) && isObject(operation.responses) ? operation.responses : {};
        for (const [status, response] of Object.entries(responses)) {
          if (!isSharedErrorResponse(response, shared)) continue;
          shared ??= response;
          responses[status] = { $ref: `#/components/responses/${ERROR_RESPONSE}` };
        }
      }
    }
    if (shared) {
      const components = (openapiObject.components ?? {}) as JsonObject;
      openapiObject.components = { ...components, responses: { ...(components.responses as JsonObject), [ERROR_RESPONSE]: shared } };
    }
    return openapiObject as ReturnType<NonNullable<FastifyDynamicSwaggerOptions['transformObject']>>;
  },
};
