import { Type } from 'typebox';

export const ExecOpenBody = Type.Object(
  {
    command: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 8192 }), Type.Null()], {
        description: 'Shell command line, run with `sh -c` inside the instance; absent or null: an interactive shell',
      }),
    ),
    tty: Type.Optional(Type.Boolean({ description: 'Run under a pseudo-terminal (interactive use)' })),
    environment: Type.Optional(Type.String({ maxLength: 100, description: 'Environment id or slug (default: production)' })),
  },
  { additionalProperties: false },
);

export const ExecInstanceParams = Type.Object({
  application_id: Type.String({ format: 'uuid' }),
  instance: Type.String({ minLength: 1, maxLength: 100, description: 'Instance id or name (`web.1`)' }),
});

export const ExecSessionParams = Type.Object({ session_id: Type.String({ format: 'uuid' }) });

export const ExecStreamQuery = Type.Object({
  rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 9999 })),
  cols: Type.Optional(Type.Integer({ minimum: 1, maximum: 9999 })),
  term: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._+-]{1,64}$' })),
});

export const ExecSession = Type.Object({
  id: Type.String({ format: 'uuid' }),
  application_id: Type.String({ format: 'uuid' }),
  environment_id: Type.String({ format: 'uuid' }),
  instance_id: Type.String({ format: 'uuid' }),
  instance: Type.String({ description: 'Process type and ordinal, e.g. `web.1`' }),
  command: Type.Union([Type.String(), Type.Null()]),
  tty: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  exit_code: Type.Union([Type.Integer(), Type.Null()]),
});

export const ExecOpened = Type.Intersect([
  ExecSession,
  Type.Object({
    stream_path: Type.String({
      description: 'Open a WebSocket here (same credentials) to run the command; once, within attach_within_seconds',
    }),
    attach_within_seconds: Type.Integer(),
  }),
]);
