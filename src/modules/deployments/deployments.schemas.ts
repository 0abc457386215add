import { Type } from 'typebox';
import { ErrorCodeSchema } from '../../platform/failures.js';
import { Id, NullableTimestamp, Paginated, Timestamp } from '../../platform/http/schemas.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const DeployStep = Type.Object(
  {
    steps: Type.Array(Type.String()),
    current: Type.Integer(),
    substep: Type.Optional(Type.String()),
  },
  { description: 'Steps Setup, Release, Deploy, Rollout, Done; `current` is the index of the running one' },
);

export const DeploymentStatus = Type.Union(
  [Type.Literal('deploying'), Type.Literal('complete'), Type.Literal('error'), Type.Literal('rolled_back')],
  { description: 'A queued deployment reads `deploying` with `started` null; `rolled_back`: completed, then undone by its guard' },
);

const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

export const GuardSettingsSchema = Type.Object({
  window_seconds: Type.Integer({ minimum: 1, maximum: 86400, description: 'How long after completing a deployment is watched' }),
  max_error_ratio: Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1 }), Type.Null()], {
    description: 'Largest share of 5xx answers at the edge (0..1]; null: not watched',
  }),
  max_p95_factor: Type.Union([Type.Number({ minimum: 1 }), Type.Null()], {
    description: "Largest p95 latency as a multiple of the previous release's last window; null: not watched",
  }),
  max_restarts: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'Most crash restarts of the new instances; null: not watched',
  }),
  min_requests: Type.Integer({ minimum: 1, description: 'Ratios and latency are judged only past this many requests' }),
});

const GuardVerdict = Type.Object(
  {
    status: Type.Union(
      [Type.Literal('watching'), Type.Literal('passed'), Type.Literal('rolled_back'), Type.Literal('breached'), Type.Literal('superseded')],
      {
        description:
          '`breached`: a threshold was crossed but there was no earlier release to go back to; `superseded`: a later deployment came',
      },
    ),
    watch_until: Timestamp,
    settings: GuardSettingsSchema,
    measures: Type.Union([
      Type.Object({
        requests: Type.Integer(),
        errors_5xx: Type.Integer(),
        error_ratio: NullableNumber,
        p95_ms: NullableNumber,
        baseline_p95_ms: NullableNumber,
        restarts: Type.Integer(),
      }),
      Type.Null(),
    ]),
    breach: NullableString,
    rollback_deployment_id: Type.Union([Id, Type.Null()]),
  },
  { description: "The guard's watch of this deployment (null: the environment had no guard when it completed, or a rollback)" },
);

const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);

/** `DeployDiagnosis` (src/platform/runtime/diagnosis.ts) as the API shows it. */
export const DeploymentFailure = Type.Object(
  {
    reason: Type.Union([
      Type.Literal('crashed_during_start'),
      Type.Literal('crashed_in_stability_window'),
      Type.Literal('health_check_timeout'),
    ]),
    instance: Type.String({ description: 'e.g. `web.1`' }),
    process_type: Type.String(),
    exit: Type.Union([
      Type.Object({
        code: NullableInteger,
        signal: NullableString,
        description: Type.String({ description: 'e.g. `exit code 1`, `signal SIGKILL`, `OOM: …`' }),
      }),
      Type.Null(),
    ]),
    port: Type.Union([Type.Integer(), Type.Null()], { description: 'the port it was given in PORT' }),
    health_check: Type.Union([
      Type.Object({
        path: Type.String(),
        port: Type.Integer(),
        result: Type.String({ description: 'what the last check got: `connection refused`, `HTTP 404`, `no answer within 2s`, …' }),
        status: NullableInteger,
      }),
      Type.Null(),
    ]),
    listening_ports: Type.Union([Type.Array(Type.Integer()), Type.Null()], {
      description: 'TCP ports its processes listened on when the check gave up; null: not known',
    }),
    listening_checked: Type.String({ description: 'what was looked at to find `listening_ports`' }),
    seconds_after_healthy: Type.Union([Type.Number(), Type.Null()]),
    output: Type.Array(Type.String(), { description: 'its last lines of output (at most 20), secrets scrubbed' }),
    hint: NullableString,
  },
  { description: "Why the deployment's new instances failed (null unless they did)" },
);

const ReleaseRef = Type.Object({ id: Id, version: Type.Integer(), commit_sha: NullableString });

const DeploymentFields = {
  id: Id,
  application_id: Id,
  environment_id: Id,
  environment: Type.String({ description: 'the slug of the environment deployed to' }),
  release: ReleaseRef,
  status: DeploymentStatus,
  complete: Type.Boolean(),
  error: Type.Boolean(),
  error_detail: NullableString,
  error_code: ErrorCodeSchema,
  failure: Type.Union([DeploymentFailure, Type.Null()]),
  deploy_metadata: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: '`url`: the application through the router; `hostname`, `release_version`, `process_counts`, `instances`',
  }),
  deploy_step: Type.Union([DeployStep, Type.Null()]),
  job_id: NullableString,
  queue_reason: Type.Union([Type.String(), Type.Null()], {
    description:
      'While queued: why it has not started, e.g. `waiting for deployment <id> of app web` or `organization limit 3 reached: …`; null otherwise',
  }),
  is_rollback: Type.Boolean({ description: 'A rollback: an earlier release redeployed as it was' }),
  rollback_of: Type.Union([Id, Type.Null()], { description: 'A rollback: the release it rolled back from' }),
  guard: Type.Union([GuardVerdict, Type.Null()]),
  started: NullableTimestamp,
  finished: NullableTimestamp,
  created: Timestamp,
  updated: Timestamp,
};

export const DeploymentSummary = Type.Object(DeploymentFields, { $id: 'DeploymentSummary' });
export const DeploymentDetail = Type.Object({ ...DeploymentFields, deploy_log: Type.String() }, { $id: 'DeploymentDetail' });
export const DeploymentList = Paginated(DeploymentSummary);

export const DeploymentLog = Type.Object({
  status: DeploymentStatus,
  log_text: Type.String(),
  error: Type.Boolean(),
  error_detail: NullableString,
  error_code: ErrorCodeSchema,
  deploy_step: Type.Union([DeployStep, Type.Null()]),
});

export const DeploymentIdParams = Type.Object({ deployment_id: Type.String({ format: 'uuid' }) });
export const ReleaseIdParams = Type.Object({ release_id: Type.String({ format: 'uuid' }) });

export const DeployAccepted = Type.Object({ ok: Type.Boolean(), deployment_id: Id });
export const ChainAccepted = Type.Object(
  {
    ok: Type.Boolean(),
    image_id: Id,
    image: Type.Optional(Type.String({ description: 'An image deploy: the image pinned by its digest (`host/name@sha256:…`)' })),
    job_id: Type.Optional(Type.String({ description: "An image deploy: the chain's job, which its deployment names (`job_id`)" })),
  },
  { description: 'The image being built (or pulled); its release and deployment follow in the same job' },
);

/** `POST /applications/{id}/deploy`'s body: an image deploy, or nothing (the configured branch is built). */
export const DeployBody = Type.Object(
  {
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description:
          "An image already in a registry: `host/name:tag`, `host/name@sha256:…`, or `org/project/app:tag` in this platform's registry " +
          "(REGISTRY_URL: only the organization's own repositories); another registry must be in IMAGE_PULL_REGISTRIES; absent: the configured branch is built",
      }),
    ),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Environment slug; production when absent' })),
    credentials: Type.Optional(
      Type.Object(
        { username: Type.String({ minLength: 1, maxLength: 255 }), password: Type.String({ minLength: 1, maxLength: 4096 }) },
        { additionalProperties: false, description: 'Pull credentials for another registry: stored sealed, never shown' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ConfigReleaseAccepted = Type.Object(
  { ok: Type.Boolean(), release_id: Id, version: Type.Integer(), deployment_id: Id, image_id: Id },
  { description: 'The new release (on image `image_id`, no build) and its queued deployment' },
);

export const RollbackBody = Type.Object(
  {
    release_id: Type.Optional(
      Type.String({ format: 'uuid', description: 'The release to go back to; default: the release before the one serving' }),
    ),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })),
  },
  { additionalProperties: false },
);

export const RollbackPreviewQuery = Type.Object(
  {
    release_id: Type.Optional(
      Type.String({ format: 'uuid', description: 'The release to go back to; default: the release before the one serving' }),
    ),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })),
  },
  { additionalProperties: false },
);

const RollbackRelease = Type.Object({ id: Type.String({ format: 'uuid' }), version: Type.Integer() });

export const RollbackPreview = Type.Object(
  {
    environment: Type.String({ description: 'The environment slug' }),
    serving: Type.Union([RollbackRelease, Type.Null()]),
    target: Type.Union([RollbackRelease, Type.Null()], { description: 'null when the rollback would be refused (`refusal` says why)' }),
    refusal: Type.Union([Type.String(), Type.Null()], { description: 'what `POST …/rollback` would answer (409), or null' }),
    restore_offers: Type.Array(
      Type.Object({
        addon: Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() }),
        attachment_id: Type.String({ format: 'uuid' }),
        variable: Type.String(),
        release: RollbackRelease,
        restore_point: Type.String(),
      }),
      {
        description:
          'Postgres add-ons attached here on which a release being undone ran its release command (migrations): the restore ' +
          'point recorded before the earliest of them. Rolling back never restores data by itself; restore into a fork ' +
          '(`POST …/addons/{addon}/restore {release_id}`) and swap it in (`POST …/swap`) to go back with the data too.',
      },
    ),
  },
  { $id: 'RollbackPreview' },
);
