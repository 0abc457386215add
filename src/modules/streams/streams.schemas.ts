import { Type } from 'typebox';

export const StreamQuery = Type.Object({
  last_event_id: Type.Optional(Type.String({ maxLength: 2000, description: 'Resume after this event id (the `Last-Event-ID` header wins)' })),
});

/** How an SSE route appears in the OpenAPI document. */
export const EventStream = Type.String({
  description: 'Server-Sent Events (`text/event-stream`): every event has an `id`; `: ping` comments every 15 s',
});

export const sseSchema = (summary: string, description: string) => ({
  summary, description, produces: ['text/event-stream'],
});
