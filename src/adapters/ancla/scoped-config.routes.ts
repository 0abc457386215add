import { Type, type TObject, type TProperties } from 'typebox';
import { commonErrorResponses, IdParam, Ok } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { ConfigurationsService, ScopedConfig, ScopeRef, VariableIntent } from '../../modules/configurations/index.js';
import { BulkConfigBody, ConfigVariable, CreateConfigBody, MAX_VALUE_BYTES, UpdateConfigBody } from '../../modules/configurations/index.js';

/** One entry of an array bulk request: names are checked per entry so one bad name does not refuse the rest. */
export const BulkEntry = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 1024 }),
    value: Type.String({ maxLength: MAX_VALUE_BYTES * 4 }),
    secret: Type.Optional(Type.Boolean()),
    buildtime: Type.Optional(Type.Boolean()),
    previews: Type.Optional(Type.Boolean({ description: 'given to previews of pull requests from forks (default false)' })),
  },
  { additionalProperties: false },
);

export const BulkEntryResult = Type.Object(
  {
    name: Type.String(),
    result: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('skipped'), Type.Literal('error')]),
    message: Type.Optional(Type.String()),
    variable: Type.Optional(ConfigVariable),
  },
  { $id: 'BulkEntryResult' },
);

/**
 * The answer to Ancla's form of a bulk request (`{raw: "KEY=value\n..."}` and/or `{variables}`):
 * names by outcome, as Ancla's CLI reads them; each error carries its reason as `error` (Ancla's
 * word) and `message` (Slipway's).
 */
export const BulkTextResult = Type.Object(
  {
    created: Type.Array(Type.String()),
    updated: Type.Array(Type.String({ description: 'existing non-secret names whose value was replaced' })),
    skipped: Type.Array(Type.String({ description: 'existing secrets, left as they were' })),
    errors: Type.Array(Type.Object({ name: Type.String(), error: Type.String(), message: Type.String() })),
  },
  { $id: 'BulkTextResult' },
);

export interface ScopedConfigRouteOptions<P extends TProperties> {
  /** Path up to (not including) `/config`, e.g. `/workspaces/:workspace`. */
  prefix: string;
  params: TObject<P>;
  tags: string[];
  /** What the scope is called in summaries ("workspace", "team", ...). */
  label: string;
  config: ConfigurationsService;
  scoped: ScopedConfig;
  /** Checks the caller's access and names the scope; throws 404/403. */
  scopeOf: (params: Record<string, string>, userId: string) => Promise<ScopeRef>;
  /** A further check before any write (e.g. team configuration: the team's members and admins); throws 403. */
  mayWrite?: (scope: ScopeRef, userId: string, params: Record<string, string>) => Promise<void>;
  /** Routes the caller registers itself, with another meaning at that path (Ancla's service config: src/adapters/ancla). */
  omit?: Array<'list' | 'delete'>;
}

/**
 * The configuration routes every workspace-group scope shares: list, set (create or
 * replace by name), bulk (array of entries), get, change and delete one variable.
 */
export function registerScopedConfigRoutes<P extends TProperties>(app: App, o: ScopedConfigRouteOptions<P>) {
  const { tags, config, scoped, label } = o;
  const params = Type.Object({ ...o.params.properties });
  const itemParams = Type.Object({ ...o.params.properties, config_id: IdParam });
  const scope = (request: { params: unknown }, userId: string) => o.scopeOf(request.params as Record<string, string>, userId);
  /** The scope of a write: readable by the caller, writable under the scope's own rule and the protected-environment rule. */
  const writeScope = async (request: { params: unknown }, userId: string, intents: VariableIntent[] = []) => {
    const ref = await scope(request, userId);
    await o.mayWrite?.(ref, userId, request.params as Record<string, string>);
    await config.authorizeWrite(userId, ref, intents);
    return ref;
  };

  if (!o.omit?.includes('list'))
    app.get(
      `${o.prefix}/config`,
      {
        schema: {
          tags,
          summary: `The ${label}'s variables (secrets masked)`,
          params,
          response: { 200: Type.Array(ConfigVariable), ...commonErrorResponses },
        },
      },
      async (request) => config.list(await scope(request, currentUser(request).id)),
    );

  app.post(
    `${o.prefix}/config`,
    {
      schema: {
        tags,
        summary: `Set a ${label} variable: creates it (201) or replaces the value and flags of the one with that name (200)`,
        params,
        body: CreateConfigBody,
        response: { 200: ConfigVariable, 201: ConfigVariable, ...commonErrorResponses },
      },
    },
    async (request, reply) => {
      const { created, variable } = await scoped.set(await writeScope(request, currentUser(request).id, [request.body]), request.body);
      return reply.code(created ? 201 : 200).send(variable);
    },
  );

  app.post(
    `${o.prefix}/config/bulk`,
    {
      schema: {
        tags,
        summary:
          `Set many ${label} variables: an array of entries answers one outcome per name; Ancla's form, an object with dotenv ` +
          '`raw` text and/or `variables` (one set of flags), answers the names by outcome. Existing secrets are skipped, invalid entries reported',
        params,
        body: Type.Union([Type.Array(BulkEntry, { maxItems: 1000 }), BulkConfigBody]),
        response: { 200: Type.Union([Type.Array(BulkEntryResult), BulkTextResult]), ...commonErrorResponses },
      },
    },
    async (request) => {
      const userId = currentUser(request).id;
      const body = request.body;
      if (Array.isArray(body)) {
        const intents = body.map((e) => ({ secret: e.secret ?? false, previews: e.previews ?? false }));
        return scoped.bulk(await writeScope(request, userId, intents), body);
      }
      const ref = await writeScope(request, userId, [{ secret: body.secret ?? false, previews: body.previews ?? false }]);
      const result = await config.bulk(ref, body);
      return { ...result, errors: result.errors.map((e) => ({ name: e.name, error: e.message, message: e.message })) };
    },
  );

  app.get(
    `${o.prefix}/config/:config_id`,
    {
      schema: { tags, summary: `One ${label} variable`, params: itemParams, response: { 200: ConfigVariable, ...commonErrorResponses } },
    },
    async (request) => config.get(await scope(request, currentUser(request).id), (request.params as { config_id: string }).config_id),
  );

  app.patch(
    `${o.prefix}/config/:config_id`,
    {
      schema: {
        tags,
        summary: `Change a ${label} variable`,
        params: itemParams,
        body: UpdateConfigBody,
        response: { 200: ConfigVariable, ...commonErrorResponses },
      },
    },
    async (request) => {
      const id = (request.params as { config_id: string }).config_id;
      return config.update(await writeScope(request, currentUser(request).id, [{ ...request.body, id }]), id, request.body);
    },
  );

  if (!o.omit?.includes('delete'))
    app.delete(
      `${o.prefix}/config/:config_id`,
      {
        schema: {
          tags,
          summary: `Delete a ${label} variable (lower scopes then fall back to the next higher one)`,
          params: itemParams,
          response: { 200: Ok, ...commonErrorResponses },
        },
      },
      async (request) =>
        config.delete(await writeScope(request, currentUser(request).id), (request.params as { config_id: string }).config_id),
    );
}
