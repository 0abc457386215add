import { Type } from 'typebox';
import { ErrorCodeSchema } from '../../platform/failures.js';
import { Id, Paginated, Timestamp } from '../../platform/http/schemas.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const ProcessesSchema = Type.Record(
  Type.String(),
  Type.Object({ cmd: Type.String(), env: Type.Record(Type.String(), Type.String()) }),
);
export const StepSchema = Type.Object({ steps: Type.Array(Type.String()), current: Type.Integer(), substep: Type.Optional(Type.String()) });

export const ImageSummary = Type.Object(
  {
    id: Id,
    version: Type.Integer(),
    application_id: Id,
    repository_name: Type.String(),
    built: Type.Boolean(),
    error: Type.Boolean(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'ImageSummary' },
);

export const ImageDetail = Type.Object(
  {
    id: Id,
    version: Type.Integer(),
    application_id: Id,
    repository_name: Type.String(),
    image_id: Nullable(Type.String({ description: 'content digest sha256:…' })),
    built: Type.Boolean(),
    error: Type.Boolean(),
    error_detail: Nullable(Type.String()),
    error_code: ErrorCodeSchema,
    build_slug: Nullable(Type.String()),
    build_ref: Nullable(Type.String()),
    dockerfile: Nullable(Type.String()),
    procfile: Nullable(Type.String()),
    processes: Nullable(ProcessesSchema),
    image_metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
    commit_sha: Nullable(Type.String()),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'ImageDetail' },
);

export const BuildLogSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('building'), Type.Literal('built'), Type.Literal('error')]),
    version: Type.Integer(),
    log_text: Type.String(),
    error: Type.Boolean(),
    error_detail: Nullable(Type.String()),
    error_code: ErrorCodeSchema,
    build_step: Nullable(StepSchema),
    queue_reason: Type.Optional(
      Nullable(Type.String({ description: "While its job waits: why (e.g. `waiting for deployment <id> of app web`); images' logs only" })),
    ),
  },
  { $id: 'BuildLog' },
);

export const ImageList = Paginated(ImageSummary);

export const BuildBody = Type.Union([
  Type.Object(
    {
      ref: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 255,
          pattern: '^[A-Za-z0-9_][A-Za-z0-9._/-]*$',
          description: 'branch, tag or commit; default: the auto_deploy_branch',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);

export const BuildAccepted = Type.Object({ ok: Type.Boolean(), image_id: Id, version: Type.Integer() });
export const ImageIdParams = Type.Object({ image_id: Type.String({ format: 'uuid' }) });
