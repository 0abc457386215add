import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';
import { isObject } from './named-schemas.js';

/**
 * Response serializers compiled on a route's first answer rather than at start: Fastify compiles
 * one per route and status code when it gets ready, and the ~300 routes' generated code was most of
 * an idle control plane's heap, though a deployment uses a fraction of them. What each route
 * answers is unchanged: the same compiler (Fastify's default, fast-json-stringify), later.
 */
export const lazySerializers: NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']> = {
  buildSerializer(externalSchemas: unknown, serializerOpts: unknown) {
    // Fastify builds one per plugin context at start: the shared schemas are prepared on the context's first answer.
    let compile: ReturnType<ReturnType<typeof SerializerSelector>> | undefined;
    const compiler = () =>
      (compile ??= SerializerSelector()(literalUnionsAsEnums(externalSchemas), serializerOpts as SerializerSelector.Options));
    return (route: SerializerSelector.RouteDefinition) => {
      let serialize: SerializerSelector.Serializer | undefined;
      return (document: unknown) => (serialize ??= compiler()({ ...route, schema: literalUnionsAsEnums(route.schema) }))(document);
    };
  },
};

const LITERAL_KEYWORDS = new Set(['const', 'type', 'description']);

/**
 * A copy of a response schema where each `anyOf` of string constants (TypeBox's union of literals: a status, a
 * kind) is the string enum it means. fast-json-stringify serializes an `anyOf` by running an Ajv validator per
 * branch on every answer (compiled on the first, tens of milliseconds); an enum it writes as the string it is.
 * What that gives up: a value outside the union was a 500, and is now answered as it is (a null as ""). The
 * handlers' types (TypeBox's, from the same schemas) already hold every such field to one of the literals.
 */
export function literalUnionsAsEnums(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(literalUnionsAsEnums);
  if (!isObject(schema)) return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = literalUnionsAsEnums(value);
  const { anyOf, ...rest } = copy;
  const literals =
    Array.isArray(anyOf) &&
    anyOf.length > 0 &&
    anyOf.every(
      (branch) => isObject(branch) && typeof branch.const === 'string' && Object.keys(branch).every((k) => LITERAL_KEYWORDS.has(k)),
    );
  return literals ? { ...rest, type: 'string', enum: (anyOf as { const: string }[]).map((branch) => branch.const) } : copy;
}

/** A validator that compiles its schema on first use (Fastify reads `.errors` after a failed call, as from Ajv's). */
export function compiledOnFirstUse<T>(
  compile: () => ((data: T) => boolean) & { errors?: unknown },
): ((data: T) => boolean) & { errors?: unknown } {
  let validate: ReturnType<typeof compile> | undefined;
  const lazy = (data: T) => {
    validate ??= compile();
    const valid = validate(data);
    lazy.errors = validate.errors;
    return valid;
  };
  lazy.errors = undefined as unknown;
  return lazy;
}
