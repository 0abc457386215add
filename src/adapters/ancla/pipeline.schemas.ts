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
