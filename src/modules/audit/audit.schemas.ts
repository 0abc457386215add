import { Type, type Static } from 'typebox';
import { Id, Paginated, PaginationQuery, Slug, Timestamp } from '../../platform/http/schemas.js';

export const AuditEntry = Type.Object(
  {
    id: Type.Integer(),
    at: Timestamp,
    organization_id: Type.Union([Id, Type.Null()]),
    actor: Type.Object({
      user_id: Type.Union([Id, Type.Null()]),
      username: Type.Union([Type.String(), Type.Null()]),
      credential_kind: Type.String({ description: '`api_key`, `session`, `password` (a login), `signature` (a signed webhook) or `none`' }),
      credential_id: Type.Union([Type.String(), Type.Null()], { description: 'The API key or session id (never the secret itself)' }),
    }),
    action: Type.String({ description: 'The route that made the change: `METHOD /v1/pattern`' }),
    resource_type: Type.String(),
    resource_id: Type.Union([Type.String(), Type.Null()]),
    client_address: Type.Union([Type.String(), Type.Null()], {
      description: 'The client: X-Forwarded-For read through the trusted proxies only (TRUST_PROXY), else the peer',
    }),
    peer_address: Type.Union([Type.String(), Type.Null()], { description: "The connection's peer: the proxy in front, or the client" }),
    denied: Type.Boolean({ description: 'A refused request (403): who tried what, not a change' }),
    request_id: Type.String(),
    before: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'Non-secret fields before the change' }),
    after: Type.Union([Type.Unknown(), Type.Null()], { description: 'Non-secret fields of the change (secret-looking values redacted)' }),
  },
  { $id: 'AuditEntry' },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const AuditList = Paginated(AuditEntry);

export const AuditQuery = Type.Object({
  ...PaginationQuery.properties,
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'a user id or username' })),
  resource_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  resource_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'entries at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'entries before this time' })),
});
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditOrgParams = Type.Object({ org_slug: Slug });
