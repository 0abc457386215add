import { Type } from 'typebox';
import { ErrorCodeSchema } from '../../platform/failures.js';
import { Id, NullableTimestamp, Paginated, Timestamp } from '../../platform/http/schemas.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const RunStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('running'),
  Type.Literal('succeeded'),
  Type.Literal('failed'),
  Type.Literal('timed_out'),
]);

export const RunBody = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 4096, description: 'Shell command line, run with `sh -c`' }),
    process_type: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: '^[A-Za-z0-9_-]+$',
        description: "Whose environment and pod class the run gets; default `web` (or the release's first process type)",
      }),
    ),
    environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })),
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 24 * 3600, default: 600, description: 'Killed after this (status `timed_out`)' }),
    ),
  },
  { additionalProperties: false },
);

export const Run = Type.Object(
  {
    id: Id,
    application_id: Id,
    environment_id: Id,
    release_id: Type.Union([Id, Type.Null()]),
    command: Type.String(),
    process_type: Type.String(),
    status: RunStatus,
    exit_code: Type.Union([Type.Integer(), Type.Null()]),
    timeout_seconds: Type.Integer(),
    error_detail: NullableString,
    error_code: ErrorCodeSchema,
    cron_entry_id: Type.Union([Id, Type.Null()], { description: 'the scheduled job (cron entry) that started it; null when a user did' }),
    scheduled_for: Type.Union([Timestamp, Type.Null()], { description: 'the occurrence of the schedule it ran for' }),
    started_at: NullableTimestamp,
    finished_at: NullableTimestamp,
    created_at: Timestamp,
  },
  { $id: 'OneOffRun' },
);

export const RunList = Paginated(Run);

export const RunLog = Type.Object({
  status: RunStatus,
  log_text: Type.String(),
  error: Type.Boolean(),
  error_detail: NullableString,
  error_code: ErrorCodeSchema,
  exit_code: Type.Union([Type.Integer(), Type.Null()]),
  deploy_step: Type.Null({ description: 'Always null: kept so the shape matches the deployment log' }),
});

export const RunIdParams = Type.Object({ run_id: Type.String({ format: 'uuid' }) });

/** An attached run's parameters travel in the query: the body is the command's standard input. */
export const AttachedRunQuery = Type.Object(
  {
    command: RunBody.properties.command,
    process_type: RunBody.properties.process_type,
    environment: RunBody.properties.environment,
    timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 24 * 3600, description: 'Killed after this (status `timed_out`); default 3600' }),
    ),
    tty: Type.Optional(Type.Boolean({ description: 'Run under a pseudo-terminal (an interactive shell); stdout and stderr then merge' })),
    rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 24 })),
    cols: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 80 })),
    term: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9._+-]{1,64}$', description: 'TERM under the terminal; default xterm-256color' }),
    ),
  },
  { additionalProperties: false },
);

export const RunStream = Type.String({
  description:
    'Frames (`application/vnd.slipway.run-stream`): one type byte (1 stdout, 2 stderr, 3 end), a 4-byte big-endian length, the bytes. ' +
    'The end frame is JSON `{id, status, exit_code, error_detail}` and comes last.',
});
