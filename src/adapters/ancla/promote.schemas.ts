import { Type } from 'typebox';
import { Slug } from '../../platform/http/schemas.js';

export const AnclaPromoteBody = Type.Object(
  {
    source_env: Slug,
    target_env: Slug,
    service: Type.Optional(
      Type.String({ ...Slug, description: 'one service; default: every service with a deployed release in source_env' }),
    ),
    configuration: Type.Optional(
      Type.Union([Type.Literal('source'), Type.Literal('target')], {
        description: "the source release's frozen configuration (default) or the target environment's own",
      }),
    ),
  },
  { additionalProperties: false },
);

export const AnclaPromotePreviewQuery = Type.Object({ service: Slug, source_env: Slug, target_env: Slug });

const ServingRelease = Type.Union([
  Type.Object({
    release_id: Type.String({ format: 'uuid' }),
    version: Type.Integer({ description: 'release version' }),
    build_version: Type.Union([Type.Integer(), Type.Null()], { description: 'its image (build) version' }),
    commit_sha: Type.Union([Type.String(), Type.Null()]),
  }),
  Type.Null(),
]);

/** What promoting a service from one environment to another would ship, from the releases each serves now. */
export const AnclaPromotePreview = Type.Object(
  {
    service: Type.String(),
    source_env: Type.String(),
    target_env: Type.String(),
    source: ServingRelease,
    target: ServingRelease,
    can_promote: Type.Boolean({ description: 'the source environment serves a release of the service (409 on promote otherwise)' }),
    same_build: Type.Boolean({ description: 'both serve the same image already' }),
    configuration: Type.Object(
      {
        added: Type.Array(Type.String()),
        removed: Type.Array(Type.String()),
        changed: Type.Array(Type.String({ description: 'plain values only: secret values are never compared in the open' })),
      },
      { description: "the source release's variables against the target's current release (names only)" },
    ),
  },
  { $id: 'AnclaPromotePreview' },
);
