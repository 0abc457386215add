import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { compiledOnFirstUse } from './lazy-compilers.js';

// ajv-formats is CommonJS; under ESM its function arrives as the module's `default`.
type AddFormats = (ajv: Ajv) => Ajv;
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({
    allErrors: false,
    useDefaults: true,
    // Unknown fields are refused (422), never silently dropped.
    removeAdditional: false,
    strict: false,
    ...options,
  });
  addFormats(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly (a string is never coerced into a boolean or number);
 * path and query parameters arrive as text, so those are coerced to the schema's types.
 */
const bodyAjv = makeAjv({ coerceTypes: false });
const paramsAjv = makeAjv({ coerceTypes: 'array' });

/** Compiled on a route's first request, not at start (see lazy-compilers.ts). */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : paramsAjv;
  return compiledOnFirstUse(() => ajv.compile(schema as object)) as ReturnType<FastifySchemaCompiler<unknown>>;
};
