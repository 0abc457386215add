import { Type } from 'typebox';
import { Slug } from '../../platform/http/schemas.js';

// Path parameters of the records whose logs are streamed (the same shapes their modules use).
export const ImageIdParams = Type.Object({ image_id: Type.String({ format: 'uuid' }) });
export const DeploymentIdParams = Type.Object({ deployment_id: Type.String({ format: 'uuid' }) });
export const EnvDeployParams = Type.Object({ workspace: Slug, project: Slug, env: Slug, deploy_id: Type.String({ format: 'uuid' }) });

export const StreamQuery = Type.Object({
  last_event_id: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Resume after this event id (the `Last-Event-ID` header wins)' }),
  ),
});

/** How an SSE route appears in the OpenAPI document. */
export const EventStream = Type.String({
  description: 'Server-Sent Events (`text/event-stream`): every event has an `id`; `: ping` comments every 15 s',
});

export const sseSchema = (summary: string, description: string) => ({
  summary,
  description,
  produces: ['text/event-stream'],
});
