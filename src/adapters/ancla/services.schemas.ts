import { Type } from 'typebox';
import { Id, Name, PaginationQuery, Pagination, Slug, Timestamp } from '../../platform/http/schemas.js';
import { PLATFORMS, ProcessCounts } from '../../modules/applications/index.js';

/**
 * Ancla's services family: a service is an application seen in one environment, a build is an
 * image, a deploy is a deployment (docs/api-decisions.md, "Ancla's clients"). Text fields the
 * clients decode as plain strings are `""` when unset, never null (Ancla's Python models refuse null).
 */

const Status = Type.Union(
  [
    Type.Literal('queued'),
    Type.Literal('building'),
    Type.Literal('releasing'),
    Type.Literal('deploying'),
    Type.Literal('success'),
    Type.Literal('error'),
  ],
  { description: "Ancla's words: `success` where Slipway says built/complete (src/adapters/ancla/vocabulary.ts)" },
);

export const EnvServiceParams = Type.Object({ workspace: Slug, project: Slug, env: Slug, service: Slug });
export const EnvParams = Type.Object({ workspace: Slug, project: Slug, env: Slug });
export const BuildVersionParams = Type.Object({ ...EnvServiceParams.properties, version: Type.Integer({ minimum: 1 }) });
export const ServiceConfigItemParams = Type.Object({
  ...EnvServiceParams.properties,
  config_id: Type.String({ minLength: 1, maxLength: 1024, description: "the variable's id, or its name" }),
});
export const BuildIdParams = Type.Object({ image_id: Type.String({ format: 'uuid' }) });
export const DeployIdParams = Type.Object({ deployment_id: Type.String({ format: 'uuid' }) });

export const Service = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    platform: Type.String(),
    environment: Type.String({ description: 'the environment it is seen in' }),
    github_repository: Type.String({ description: '"" when none' }),
    auto_deploy_branch: Type.String({ description: '"" when none' }),
    process_counts: Type.Record(Type.String(), Type.Integer(), { description: 'in this environment' }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'AnclaService' },
);

export const CreateServiceBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
    platform: Type.Optional(Type.Union(PLATFORMS.map((p) => Type.Literal(p)))),
  },
  { additionalProperties: false },
);

const NullableText = (maxLength: number, extra: object = {}) =>
  Type.Union([Type.String({ maxLength, ...extra }), Type.Null()], { description: '"" or null: none' });

export const UpdateServiceBody = Type.Object(
  {
    github_repository: Type.Optional(NullableText(1024)),
    auto_deploy_branch: Type.Optional(NullableText(255, { pattern: '^([A-Za-z0-9._/-]+)?$' })),
  },
  { additionalProperties: false },
);

export const ScaleServiceBody = Type.Object({ process_counts: ProcessCounts }, { additionalProperties: false });

export const DeployServiceBody = Type.Union([
  Type.Object(
    {
      ref: Type.Optional(
        Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_][A-Za-z0-9._/-]*$', description: 'branch, tag or commit' }),
      ),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);

/** `POST .../services/{svc}/deploy`: the build that starts the chain, and the environment deploy tracking it. */
export const DeployResult = Type.Object(
  {
    build_id: Type.String({ description: 'the build (image) id; "" when the pipeline could not start' }),
    version: Type.Integer({ description: 'the build version (0: none)' }),
    deploy_id: Id,
    job_id: Type.String({ description: 'the pipeline job running build → release → deploy' }),
    error: Type.Boolean({ description: 'the pipeline could not start (the environment deploy records why)' }),
    error_detail: Type.String(),
  },
  { $id: 'AnclaDeployResult' },
);

export const TriggerBuildBody = DeployServiceBody;

export const BuildResult = Type.Object({ build_id: Id, version: Type.Integer() }, { $id: 'AnclaBuildResult' });

export const Build = Type.Object(
  {
    id: Id,
    version: Type.Integer(),
    status: Status,
    built: Type.Boolean(),
    error: Type.Boolean(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'AnclaBuild' },
);

export const BuildList = Type.Object({ items: Type.Array(Build), pagination: Pagination }, { $id: 'AnclaBuildList' });

export const BuildDetail = Type.Object(
  {
    ...Build.properties,
    error_detail: Type.String(),
    commit_sha: Type.String(),
    build_ref: Type.String(),
    job_id: Type.String(),
  },
  { $id: 'AnclaBuildDetail' },
);

/** A build's log; it carries the build's own fields too (one of Ancla's SDKs reads this route as a build). */
export const BuildLog = Type.Object(
  { ...Build.properties, log_text: Type.String(), error_detail: Type.String() },
  { $id: 'AnclaBuildLog' },
);

export const Deploy = Type.Object(
  {
    id: Id,
    status: Status,
    complete: Type.Boolean(),
    error: Type.Boolean(),
    error_detail: Type.String(),
    job_id: Type.String(),
    release_version: Type.Integer(),
    environment: Type.String(),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'AnclaDeploy' },
);

// The bare array's items are the same fields without the name: a schema holds each `$id` once.
export const DeployList = Type.Union(
  [Type.Object({ items: Type.Array(Deploy), pagination: Pagination }), Type.Array(Type.Object(Deploy.properties))],
  {
    $id: 'AnclaDeployList',
    description: 'The page `{items, ...}`; Go clients (`User-Agent: Go-http-client/…`) get the bare array (docs/api-decisions.md)',
  },
);

export const DeployLog = Type.Object(
  {
    status: Type.Union([Type.Literal('deploying'), Type.Literal('complete'), Type.Literal('error')]),
    log_text: Type.String(),
    error: Type.Boolean(),
    error_detail: Type.String(),
  },
  { $id: 'AnclaDeployLog' },
);

const Stage = Type.Union([
  Type.Object({
    id: Id,
    version: Type.Union([Type.Integer(), Type.Null()]),
    status: Status,
    error_detail: Type.String(),
    updated: Timestamp,
  }),
  Type.Null(),
]);

export const PipelineStatus = Type.Object(
  { build: Stage, release: Stage, deploy: Stage },
  { $id: 'AnclaServicePipelineStatus', description: 'The newest build, release and deploy of the service in this environment' },
);

export const ListQuery = PaginationQuery;
