import { Type } from 'typebox';
import { Id, Timestamp } from '../../platform/http/schemas.js';
import { StepSchema } from '../images/index.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const StageStatus = Nullable(
  Type.Object({
    id: Id,
    version: Nullable(Type.Integer({ description: 'image or release version (for a deployment: its release)' })),
    status: Type.String({ description: 'building | built | error (images, releases); deploying | complete | error (deployments)' }),
    error_detail: Nullable(Type.String()),
    step: Nullable(StepSchema),
    updated: Timestamp,
    environment: Type.Optional(Type.String({ description: 'releases and deployments: the slug of their environment' })),
  }),
);

export const PipelineStatus = Type.Object({ build: StageStatus, release: StageStatus, deploy: StageStatus }, { $id: 'PipelineStatus' });

const Seconds = Nullable(Type.Number({ description: 'seconds' }));
const StageMetrics = Type.Object({
  total: Type.Integer({ description: 'finished records considered (the newest `range`)' }),
  success: Type.Integer(),
  error: Type.Integer(),
  success_rate: Nullable(Type.Number({ description: 'success / total, 0..1; null without records' })),
  duration: Type.Object({ avg: Seconds, p50: Seconds, p95: Seconds }, { description: 'from start of work to finish' }),
});

export const PipelineMetrics = Type.Object(
  { range: Type.Integer(), build: StageMetrics, release: StageMetrics, deploy: StageMetrics },
  { $id: 'PipelineMetrics' },
);

export const MetricsQuery = Type.Object({
  range: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'the last N finished records per stage' })),
});
