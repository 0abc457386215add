import { Type } from 'typebox';
import { ErrorResponse } from '../../platform/http/schemas.js';

const ScopeValues = Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 });

/** GET token request: registries and clients send more parameters (account, client_id), which are ignored. */
export const TokenQuery = Type.Object({
  service: Type.Optional(Type.String({ maxLength: 255 })),
  scope: Type.Optional(ScopeValues),
  account: Type.Optional(Type.String({ maxLength: 255 })),
  client_id: Type.Optional(Type.String({ maxLength: 255 })),
  offline_token: Type.Optional(Type.Boolean()),
});

/**
 * POST token request (OAuth2 form). Unknown fields are accepted, unlike other bodies:
 * OAuth2 (RFC 6749 §3.1) requires servers to ignore unrecognized parameters.
 */
export const TokenForm = Type.Object({
  grant_type: Type.String({ maxLength: 64 }),
  service: Type.Optional(Type.String({ maxLength: 255 })),
  client_id: Type.Optional(Type.String({ maxLength: 255 })),
  access_type: Type.Optional(Type.String({ maxLength: 32 })),
  scope: Type.Optional(Type.Union([Type.String({ maxLength: 8192 }), ScopeValues])),
  username: Type.Optional(Type.String({ maxLength: 255 })),
  password: Type.Optional(Type.String({ maxLength: 1024 })),
  refresh_token: Type.Optional(Type.String({ maxLength: 8192 })),
});

export const TokenResponse = Type.Object(
  {
    token: Type.String({ description: 'Registry bearer token (JWT)' }),
    access_token: Type.String({ description: 'Same token, OAuth2 name' }),
    expires_in: Type.Integer({ description: 'Seconds' }),
    issued_at: Type.String({ format: 'date-time' }),
    scope: Type.String({ description: 'Granted scopes, space separated' }),
    refresh_token: Type.Optional(Type.String({ description: 'Only with offline_token=true / access_type=offline' })),
  },
  { $id: 'RegistryToken' },
);

export const SigningCert = Type.Object({
  certificate: Type.String({
    description: 'PEM: the current certificate, then certificates of recently rotated keys (a registry rootcertbundle)',
  }),
  key_id: Type.String({ description: 'libtrust key id of the current signing key' }),
});

export const tokenErrors = { 400: ErrorResponse, 401: ErrorResponse, 415: ErrorResponse, 422: ErrorResponse };
