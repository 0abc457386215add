import { Type } from 'typebox';
import { Slug } from '../../platform/http/schemas.js';

const AnclaStage = Type.Union([
  Type.Object({
    status: Type.String({ description: 'success | error | building (build); success | error | pending | in_progress (deploy)' }),
    error_detail: Type.Union([Type.String(), Type.Null()]),
  }),
  Type.Null(),
]);

/** Ancla's pipeline status of one service in one environment: its newest build and where its deploy stands. */
export const AnclaPipelineStatus = Type.Object({ build: AnclaStage, deploy: AnclaStage }, { $id: 'AnclaPipelineStatus' });

export const AnclaPipelineStatusQuery = Type.Object({
  service: Slug,
  env: Type.Optional(Type.String({ ...Slug, description: 'an environment slug of the project; default: every environment' })),
});

/** Ancla's `service` and `env` query of a project's pipeline operations (both required there). */
export const AnclaServiceEnvQuery = Type.Object({ service: Slug, env: Slug });

export const AnclaHistoryQuery = Type.Object({
  ...AnclaServiceEnvQuery.properties,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
});

/** One deploy (a Slipway deployment) of a service in an environment, in Ancla's words. */
export const AnclaDeployEntry = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    version: Type.Union([Type.Integer({ description: 'its release' }), Type.Null()]),
    commit_sha: Type.Union([Type.String(), Type.Null()]),
    status: Type.String({ description: 'success | error | pending | in_progress' }),
    complete: Type.Boolean(),
    error: Type.Boolean(),
    error_detail: Type.Union([Type.String(), Type.Null()]),
    rollback: Type.Boolean({ description: 'a redeploy of an earlier release' }),
    job_id: Type.Union([Type.String(), Type.Null()]),
    created: Type.String(),
    updated: Type.String(),
  },
  { $id: 'AnclaDeployEntry' },
);

/** A deploy started by `pipeline/deploy` or `promote`: an environment deploy and, per service, its records so far. */
export const AnclaPipelineRun = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the environment deploy (GET .../envs/{env}/deploys/{id})' }),
    environment: Type.String(),
    from: Type.Union([Type.String(), Type.Null()], { description: 'a promotion: its source environment' }),
    status: Type.String({ description: 'success | error | in_progress' }),
    error_detail: Type.Union([Type.String(), Type.Null()]),
    services: Type.Array(
      Type.Object({
        service: Type.String(),
        build_id: Type.Union([Type.String(), Type.Null()]),
        release_id: Type.Union([Type.String(), Type.Null()]),
        deploy_id: Type.Union([Type.String(), Type.Null()]),
        status: Type.String(),
        error_detail: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
    created: Type.String(),
  },
  { $id: 'AnclaPipelineRun' },
);
