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
    restored_from: Type.Union([Type.String(), Type.Null()], { description: 'a fork: the add-on and point it was restored from' }),
    last_proven_restorable_at: Type.Union([Timestamp, Type.Null()], { description: 'when a restore drill last passed (postgres)' }),
    drill_check_query: Type.Union([Type.String(), Type.Null()], { description: 'the query each restore drill runs on its restored copy' }),
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

export const AddonBackup = Type.Object(
  {
    id: Id,
    status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
    trigger: Type.Union([Type.Literal('manual'), Type.Literal('scheduled')]),
    size_bytes: Type.Union([Type.Integer(), Type.Null()]),
    /** Where the backup is kept: the add-on's local repository, or the S3-compatible store (BACKUP_S3_*). */
    location: Type.Union([Type.Literal('local'), Type.Literal('s3')]),
    detail: Type.Union([Type.String(), Type.Null()]),
    started: Timestamp,
    finished: NullableTimestamp,
  },
  { $id: 'AddonBackup' },
);

export const AddonDrill = Type.Object(
  {
    ok: Type.Boolean(),
    at: Timestamp,
    duration_ms: Type.Integer(),
    backup_id: Type.Union([Id, Type.Null()]),
    detail: Type.Union([Type.String(), Type.Null()], { description: 'why it failed (a damaged repository says so)' }),
    tables: Type.Record(Type.String(), Type.Integer(), { description: 'rows per table of the restored copy, database.schema.table' }),
    check: Type.Optional(
      Type.Union([
        Type.Object(
          {
            query: Type.String(),
            rows: Type.Union([Type.Integer(), Type.Null()], { description: 'rows it returned (null: it failed)' }),
            first_value: Type.Union([Type.String(), Type.Null()], { description: "the first row's first value, at most 200 characters" }),
          },
          { description: "the add-on's check query, run read-only as the application's role on the restored copy" },
        ),
        Type.Null(),
      ]),
    ),
  },
  { $id: 'AddonDrill' },
);

export const AddonBackups = Type.Object(
  {
    backups: Type.Array(AddonBackup),
    window: Type.Union([Type.Object({ earliest: Timestamp, latest: NullableTimestamp }), Type.Null()], {
      description: 'the times a restore can reach (null: no backup yet; latest null: the server is not running)',
    }),
    retention_days: Type.Integer(),
    last_drill: Type.Union([AddonDrill, Type.Null()]),
    last_proven_restorable_at: NullableTimestamp,
  },
  { $id: 'AddonBackups' },
);

export const RestoreAddonBody = Type.Object(
  {
    name: Slug,
    time: Type.Optional(Type.String({ format: 'date-time', description: 'a point in time inside the retention window' })),
    backup_id: Type.Optional(Type.String({ format: 'uuid', description: 'the end of this base backup' })),
    restore_point: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: "a named restore point (a release's)" })),
    release_id: Type.Optional(
      Type.String({ format: 'uuid', description: 'before this release: the restore point recorded before its release command' }),
    ),
  },
  {
    $id: 'RestoreAddonBody',
    additionalProperties: false,
    description: 'the new add-on (the fork) and exactly one of time, backup_id, restore_point, release_id',
  },
);

export const SwapAddonBody = Type.Object(
  {
    attachment_id: Type.String({ format: 'uuid', description: "another add-on's attachment, moved to this one" }),
    confirm: Type.Boolean({ description: 'must be true: the application then uses this add-on' }),
  },
  { $id: 'SwapAddonBody', additionalProperties: false },
);

export const DrillCheckBody = Type.Object(
  {
    query: Type.Union([Type.String({ minLength: 1, maxLength: 4000 }), Type.Null()], {
      description: 'a query returning rows (SELECT, WITH, VALUES, TABLE), run read-only for at most 30 s; null removes it',
    }),
  },
  { $id: 'DrillCheckBody', additionalProperties: false },
);
