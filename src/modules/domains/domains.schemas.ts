import { Type } from 'typebox';
import { Id, IdParam, NullableTimestamp, Slug, Timestamp } from '../../platform/http/schemas.js';

/** A DNS host name (lower-cased before the check): labels of letters, digits and inner hyphens, at least two. */
export const HOSTNAME_PATTERN = '^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$';

export const Domain = Type.Object(
  {
    id: Id,
    hostname: Type.String(),
    application_id: Id,
    environment: Type.String({ description: 'slug of the environment this name serves' }),
    verified: Type.Boolean(),
    verified_at: NullableTimestamp,
    verification: Type.Object(
      {
        method: Type.Literal('dns'),
        record_type: Type.Literal('TXT'),
        record_name: Type.String({ description: '`_slipway-challenge.<hostname>`' }),
        token: Type.String({ description: "the TXT record's value, this claim's own" }),
      },
      { description: "add the TXT record to the domain's zone, then call verify: the first claim proven owns the name" },
    ),
    https_redirect: Type.Boolean(),
    hsts: Type.Boolean(),
    certificate: Type.Object({
      status: Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('issued'), Type.Literal('failed')]),
      error: Type.Union([Type.String(), Type.Null()]),
      not_after: NullableTimestamp,
    }),
    created: Timestamp,
  },
  { $id: 'Domain' },
);

export const AddDomainBody = Type.Object(
  {
    hostname: Type.String({ minLength: 3, maxLength: 253 }),
    environment: Type.Optional(Slug),
    https_redirect: Type.Optional(
      Type.Boolean({ description: 'plain HTTP answers 308 to HTTPS once a certificate exists (default true)' }),
    ),
    hsts: Type.Optional(Type.Boolean({ description: 'send Strict-Transport-Security over HTTPS (default false)' })),
  },
  { additionalProperties: false },
);

export const DomainParams = Type.Object({ application_id: IdParam, domain_id: IdParam });
