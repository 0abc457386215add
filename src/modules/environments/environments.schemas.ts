import { Type } from 'typebox';
import { Id, Name, Slug, Timestamp } from '../../platform/http/schemas.js';
import { PROCESS_TYPE_PATTERN } from '../applications/index.js';
import { POD_CLASS_NAMES } from '../applications/index.js';

export const ENV_TYPES = ['production', 'staging', 'development', 'preview'] as const;
const EnvType = Type.Union([Type.Literal('production'), Type.Literal('staging'), Type.Literal('development'), Type.Literal('preview')]);
const ProcessType = Type.String({ pattern: PROCESS_TYPE_PATTERN });
const PodClassName = Type.Union(POD_CLASS_NAMES.map((n) => Type.Literal(n)));
const Branch = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._/-]+$' });

export const Environment = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    env_type: EnvType,
    auto_deploy_branch: Type.Union([Type.String(), Type.Null()], {
      description: "branch built by this environment's deploys (null: each service's own)",
    }),
    protected: Type.Boolean({ description: 'only workspace admins deploy or promote into it' }),
    process_counts: Type.Record(Type.String(), Type.Record(Type.String(), Type.Integer()), {
      description: "per service slug, the process counts this environment runs (the service's own counts overlaid by this environment's)",
    }),
    process_pod_classes: Type.Record(Type.String(), Type.Record(Type.String(), Type.String()), {
      description: 'per service slug, the pod class of each process type in this environment',
    }),
    service_count: Type.Integer({ description: "the project's services (applications), each deployable here" }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'Environment' },
);

export const CreateEnvironmentBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
    env_type: Type.Optional(EnvType),
    auto_deploy_branch: Type.Optional(Type.Union([Branch, Type.Null()])),
    protected: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateEnvironmentBody = Type.Object(
  {
    name: Type.Optional(Name),
    env_type: Type.Optional(EnvType),
    auto_deploy_branch: Type.Optional(Type.Union([Branch, Type.Null()])),
    protected: Type.Optional(Type.Boolean()),
    process_counts: Type.Optional(
      Type.Record(
        Slug,
        Type.Record(ProcessType, Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]), { additionalProperties: false }),
        {
          additionalProperties: false,
          description: '{service: {process: count}}, merged; null removes the override',
        },
      ),
    ),
    process_pod_classes: Type.Optional(
      Type.Record(Slug, Type.Record(ProcessType, Type.Union([PodClassName, Type.Null()]), { additionalProperties: false }), {
        additionalProperties: false,
        description: '{service: {process: pod class}}, merged; null removes the override',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

const ScopeLabel = Type.Union([
  Type.Literal('workspace'),
  Type.Literal('team'),
  Type.Literal('project'),
  Type.Literal('environment'),
  Type.Literal('service'),
]);

export const ResolvedServiceConfig = Type.Object(
  {
    environment: Type.String(),
    service: Type.String(),
    scopes: Type.Array(Type.Object({ scope: ScopeLabel, id: Id, slug: Type.String() }), {
      description: 'the layers, highest first; a lower one wins',
    }),
    variables: Type.Array(
      Type.Object({
        name: Type.String(),
        value: Type.String({ description: '"**secret**" for secrets' }),
        secret: Type.Boolean(),
        buildtime: Type.Boolean(),
        previews: Type.Boolean({ description: 'marked for previews: the only variables a preview of a fork gets' }),
        scope: ScopeLabel,
        config_id: Id,
        overrides: Type.Array(ScopeLabel, { description: 'higher scopes whose value of this name is shadowed' }),
      }),
    ),
  },
  { $id: 'ResolvedServiceConfig' },
);

export const EnvParams = Type.Object({ workspace: Slug, project: Slug, env: Slug });
export const EnvServiceParams = Type.Object({ workspace: Slug, project: Slug, env: Slug, service: Slug });
