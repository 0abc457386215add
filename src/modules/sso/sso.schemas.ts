import { Type } from 'typebox';
import { Id, Timestamp } from '../../platform/http/schemas.js';

export const ISSUER_NAME_PATTERN = '^[a-z0-9][a-z0-9-]{0,39}$';

export const IssuerParams = Type.Object({ issuer: Type.String({ pattern: ISSUER_NAME_PATTERN, maxLength: 40 }) });

export const AuthMethods = Type.Object(
  {
    password: Type.Boolean({ description: 'Whether password sign-in is on (PASSWORD_LOGIN)' }),
    oidc: Type.Array(
      Type.Object({
        name: Type.String(),
        display_name: Type.String(),
        start: Type.String({ description: 'Where the browser goes to sign in (add `?return_to=/path`)' }),
      }),
    ),
  },
  { $id: 'AuthMethods' },
);

export const OidcIssuer = Type.Object(
  {
    name: Type.String(),
    display_name: Type.String(),
    discovery_url: Type.String(),
    client_id: Type.String(),
    allowed_email_domains: Type.Array(Type.String()),
    group_claim: Type.Union([Type.String(), Type.Null()]),
    extra_scopes: Type.Array(Type.String()),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'OidcIssuer' },
);

export const CreateOidcIssuerBody = Type.Object(
  {
    name: Type.String({ pattern: ISSUER_NAME_PATTERN, maxLength: 40 }),
    display_name: Type.String({ minLength: 1, maxLength: 64 }),
    discovery_url: Type.String({
      minLength: 8,
      maxLength: 2000,
      description: "The issuer's URL (its /.well-known/openid-configuration is read)",
    }),
    client_id: Type.String({ minLength: 1, maxLength: 500 }),
    client_secret: Type.String({ minLength: 1, maxLength: 2000, description: 'Sealed at rest; never shown again' }),
    allowed_email_domains: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$', maxLength: 253 }), {
        maxItems: 100,
        description: 'Only these e-mail domains sign in; empty: any the issuer vouches for',
      }),
    ),
    group_claim: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
    extra_scopes: Type.Optional(Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$', maxLength: 100 }), { maxItems: 20 })),
  },
  { additionalProperties: false },
);

export const GroupMapping = Type.Object(
  { id: Id, group: Type.String(), organization: Type.String(), role: Type.String(), created: Timestamp },
  { $id: 'OidcGroupMapping' },
);

export const CreateGroupMappingBody = Type.Object(
  {
    group: Type.String({ minLength: 1, maxLength: 200, description: "A value of the issuer's group claim" }),
    organization: Type.String({ minLength: 1, maxLength: 100, description: "The organization's slug" }),
    role: Type.String({ description: 'owner, admin, deployer, developer or viewer' }),
  },
  { additionalProperties: false },
);
