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

const InstancesStatus = Type.Object(
  {
    environment: Type.String({ description: 'the slug of the environment they run in (the one asked for, else production)' }),
    running: Type.Integer({ description: 'instances not crashed right now' }),
    total: Type.Integer(),
    restarts: Type.Integer({ description: 'crash restarts of the instances running now, added up' }),
    crashing: Type.Array(
      Type.Object({
        name: Type.String({ description: 'e.g. `web.1`' }),
        state: Type.String(),
        restarts: Type.Integer(),
        last_exit: Nullable(Type.String({ description: 'e.g. `exit code 1`' })),
        last_exit_at: Nullable(Timestamp),
      }),
      { description: 'instances that crashed at least once (a crash loop shows here with its last exit)' },
    ),
  },
  { description: 'The running instances of the environment: how many run, and which ones crashed and why (`slipway ps` lists them all)' },
);

export const PipelineStatus = Type.Object(
  { build: StageStatus, release: StageStatus, deploy: StageStatus, instances: Nullable(InstancesStatus) },
  { $id: 'PipelineStatus' },
);

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
