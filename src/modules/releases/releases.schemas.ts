import { Type } from 'typebox';
import { ErrorCodeSchema } from '../../platform/failures.js';
import { Id, Paginated, Timestamp } from '../../platform/http/schemas.js';
import { BuildLogSchema, ProcessesSchema } from '../images/index.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const ChangeSet = Type.Object({ added: Type.Array(Type.String()), removed: Type.Array(Type.String()), changed: Type.Array(Type.String()) });

const EnvironmentSlug = Type.String({ description: 'the slug of the environment the release belongs to' });

export const ReleaseSummary = Type.Object(
  {
    id: Id,
    version: Type.Integer(),
    application_id: Id,
    environment_id: Id,
    environment: EnvironmentSlug,
    platform: Type.String(),
    built: Type.Boolean(),
    error: Type.Boolean(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'ReleaseSummary' },
);

export const FrozenVariable = Type.Object({
  name: Type.String(),
  value: Type.String({ description: '"**secret**" for secrets' }),
  secret: Type.Boolean(),
  buildtime: Type.Boolean(),
  scope: Type.String({ description: 'organization, team, project, environment or application' }),
});

export const ReleaseImage = Type.Object({
  id: Id,
  version: Type.Integer(),
  image_id: Nullable(Type.String()),
  commit_sha: Nullable(Type.String()),
  built: Type.Boolean(),
  created: Timestamp,
});

export const ReleaseDetail = Type.Object(
  {
    id: Id,
    version: Type.Integer(),
    application_id: Id,
    environment_id: Id,
    environment: EnvironmentSlug,
    platform: Type.String(),
    repository_name: Type.String({ description: 'the image repository the release points at; "" when it never got an image' }),
    release_id: Type.String({ description: 'the release as people name it: v<version>' }),
    image: Nullable(ReleaseImage),
    configuration: Nullable(Type.Array(FrozenVariable)),
    image_changes: Nullable(ChangeSet),
    configuration_changes: Nullable(ChangeSet),
    built: Type.Boolean(),
    error: Type.Boolean(),
    error_detail: Nullable(Type.String()),
    error_code: ErrorCodeSchema,
    dockerfile: Nullable(Type.String()),
    release_metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
    commit_sha: Nullable(Type.String()),
    processes: Nullable(ProcessesSchema),
    process_counts: Nullable(Type.Record(Type.String(), Type.Integer())),
    process_pod_classes: Nullable(Type.Record(Type.String(), Type.String())),
    health_check_path: Type.String(),
    health_check_host: Nullable(Type.String()),
    deployment_timeout: Type.Integer({ description: 'seconds' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'ReleaseDetail' },
);

export const ReleaseList = Paginated(ReleaseSummary);
export const ReleaseLog = BuildLogSchema;
export const ReleaseAccepted = Type.Object({ ok: Type.Boolean(), release_id: Id, version: Type.Integer() });
export const ReleaseIdParams = Type.Object({ release_id: Type.String({ format: 'uuid' }) });
