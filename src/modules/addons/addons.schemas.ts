import { Type } from 'typebox';
import { Id, NullableTimestamp, Slug, Timestamp } from '../../platform/http/schemas.js';

export const AddonKindSchema = Type.Union([Type.Literal('postgres'), Type.Literal('redis')], { $id: 'AddonKind' });

export const AddonAttachment = Type.Object(
  {
    id: Id,
    application_id: Id,
    application: Type.String({ description: "the application's slug" }),
    environment: Type.String({ description: "the environment's slug" }),
    variable: Type.String({ description: 'the secret variable holding the connection URL' }),
    created: Timestamp,
  },
  { $id: 'AddonAttachment' },
);

export const Addon = Type.Object(
  {
    id: Id,
    name: Type.String(),
    kind: AddonKindSchema,
    plan: Type.String(),
    status: Type.Union([
      Type.Literal('creating'),
      Type.Literal('running'),
      Type.Literal('failed'),
      Type.Literal('stopped'),
      Type.Literal('deleted'),
    ]),
    status_detail: Type.Union([Type.String(), Type.Null()]),
    limits: Type.Object({ memory_mib: Type.Integer(), cpu_millicores: Type.Integer(), connections: Type.Integer() }),
    attachments: Type.Array(AddonAttachment),
    deleted_at: NullableTimestamp,
    purge_after: Type.Union([Timestamp, Type.Null()], { description: 'a deleted add-on can be undeleted until then' }),
    created: Timestamp,
  },
  { $id: 'Addon' },
);

export const AddonParams = Type.Object({ org_slug: Slug, addon: Slug });
export const AttachmentParams = Type.Object({ org_slug: Slug, addon: Slug, attachment_id: Type.String({ format: 'uuid' }) });

export const CreateAddonBody = Type.Object(
  {
    name: Slug,
    kind: AddonKindSchema,
    plan: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'default: hobby' })),
  },
  { $id: 'CreateAddonBody', additionalProperties: false },
);

export const ResizeAddonBody = Type.Object(
  { plan: Type.String({ minLength: 1, maxLength: 63 }) },
  { $id: 'ResizeAddonBody', additionalProperties: false },
);

const VARIABLE = '^[A-Za-z_][A-Za-z0-9_]{0,254}$';

export const AttachAddonBody = Type.Object(
  {
    application_id: Type.String({ format: 'uuid' }),
    environment: Type.Optional(Slug),
    as: Type.Optional(Type.String({ pattern: VARIABLE, description: 'the variable name (default DATABASE_URL or REDIS_URL)' })),
  },
  { $id: 'AttachAddonBody', additionalProperties: false },
);

/** What a change of an attached application's configuration did: the release it made (null when nothing serves there yet). */
export const AddonChange = Type.Object(
  {
    addon: Addon,
    releases: Type.Array(
      Type.Object({ application_id: Id, environment: Type.String(), release_id: Id, version: Type.Integer(), deployment_id: Id }),
      { description: 'new releases of the attached application environments that serve, each being deployed' },
    ),
  },
  { $id: 'AddonChange' },
);

export const AddonQueryBody = Type.Object(
  { sql: Type.String({ minLength: 1, maxLength: 100_000 }) },
  { $id: 'AddonQueryBody', additionalProperties: false },
);

export const AddonQueryResult = Type.Object(
  {
    command: Type.String(),
    row_count: Type.Union([Type.Integer(), Type.Null()]),
    columns: Type.Array(Type.String()),
    rows: Type.Array(Type.Array(Type.Union([Type.String(), Type.Null()]))),
    truncated: Type.Boolean({
      description: 'more rows (or more than 4 MiB of values) than returned: the rest was not read, row_count is null',
    }),
  },
  { $id: 'AddonQueryResult' },
);
