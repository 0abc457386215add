import { Type } from 'typebox';
import { Id } from '../../platform/http/schemas.js';

export const AppLogLine = Type.Object(
  {
    id: Type.String({ description: 'Increasing per application; the SSE event id' }),
    timestamp: Type.String({ format: 'date-time' }),
    process_type: Type.String(),
    instance_id: Type.String(),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    line: Type.String({ description: 'Secret values of the release are replaced by **secret**' }),
    environment_id: Id,
  },
  { $id: 'AppLogLine' },
);

export const AppLogQuery = Type.Object({
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Lines at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Lines before this time' })),
  process: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Only this process type' })),
  search: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only lines containing this text (case-insensitive)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'The newest `limit` lines of the window' })),
  environment: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Environment slug or id; default production' })),
});

export const AppLogStreamQuery = Type.Object({
  process: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Only this process type' })),
  last_event_id: Type.Optional(Type.String({ maxLength: 40, description: 'Resume after this line id (the `Last-Event-ID` header wins)' })),
});

export const AppLogPage = Type.Object({ items: Type.Array(AppLogLine) });
