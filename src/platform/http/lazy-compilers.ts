import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

/**
 * Response serializers compiled on a route's first answer rather than at start: Fastify compiles
 * one per route and status code when it gets ready, and the ~300 routes' generated code was most of
 * an idle control plane's heap, though a deployment uses a fraction of them. What each route
 * answers is unchanged: the same compiler (Fastify's default, fast-json-stringify), later.
 */
export const lazySerializers: NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']> = {
  buildSerializer(externalSchemas: unknown, serializerOpts: unknown) {
    const compile = SerializerSelector()(externalSchemas, serializerOpts as SerializerSelector.Options);
    return (route: SerializerSelector.RouteDefinition) => {
      let serialize: SerializerSelector.Serializer | undefined;
      return (document: unknown) => (serialize ??= compile(route))(document);
    };
  },
};

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
