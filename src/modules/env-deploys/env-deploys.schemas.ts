import { Type } from 'typebox';
import { Id, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';

const NullableId = Type.Union([Id, Type.Null()]);
const ServiceStatus = Type.Union([
  Type.Literal('queued'),
  Type.Literal('building'),
  Type.Literal('releasing'),
  Type.Literal('deploying'),
  Type.Literal('complete'),
  Type.Literal('error'),
]);

export const EnvDeploy = Type.Object(
  {
    id: Id,
    environment: Type.String({ description: 'environment slug' }),
    kind: Type.Union([Type.Literal('deploy'), Type.Literal('promote')]),
    from: Type.Union([Type.String(), Type.Null()], { description: 'source environment slug of a promotion' }),
    services: Type.Array(
      Type.Object({
        service: Type.String({ description: 'application slug' }),
        deployment_id: NullableId,
        image_id: NullableId,
        release_id: NullableId,
        job_id: Type.Union([Type.String(), Type.Null()], {
          description: "the pipeline job running this service's build → release → deploy",
        }),
        status: ServiceStatus,
        error_detail: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
    status: Type.Union([Type.Literal('deploying'), Type.Literal('complete'), Type.Literal('error')]),
    complete: Type.Boolean(),
    error: Type.Boolean(),
    error_detail: Type.Union([Type.String(), Type.Null()], { description: 'names the failing service(s)' }),
    job_id: Type.Union([Type.String(), Type.Null()], {
      description: "the first service's pipeline job (each service's is in `services`); null for a promotion",
    }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'EnvDeploy' },
);

export const EnvDeployLog = Type.Object(
  {
    status: Type.Union([Type.Literal('deploying'), Type.Literal('complete'), Type.Literal('error')]),
    log_text: Type.String({ description: "every service's build, release and deployment log, each line prefixed with the service" }),
    error: Type.Boolean(),
    error_detail: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'EnvDeployLog' },
);

export const DeployQuery = Type.Object(
  {
    service: Type.Optional(Slug),
    ref: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[A-Za-z0-9_][A-Za-z0-9._/-]*$',
        description: "branch, tag or commit to build; default: the environment's branch, else each service's",
      }),
    ),
  },
  { additionalProperties: false },
);

export const PromoteBody = Type.Object(
  {
    from: Slug,
    service: Type.Optional(Slug),
    configuration: Type.Optional(
      Type.Union([Type.Literal('source'), Type.Literal('target')], {
        description: "`source` (default): the source release's frozen configuration; `target`: this environment's own, resolved now",
      }),
    ),
  },
  { additionalProperties: false },
);

export const EnvDeploysQuery = PaginationQuery;

export const EnvDeployParams = Type.Object({ workspace: Slug, project: Slug, env: Slug, deploy_id: Type.String({ format: 'uuid' }) });
