import { Type } from 'typebox';
import { Id, Slug, Timestamp } from '../../platform/http/schemas.js';

/** Smallest and largest volume: ext4 needs a few MiB for itself; the image file is sparse. */
export const MIN_VOLUME_MIB = 16;
export const MAX_VOLUME_MIB = 1024 * 1024;

const Name = Type.String({ pattern: '^[a-z][a-z0-9-]{0,39}$', description: 'lowercase letters, digits and -, up to 40' });
const SizeMiB = Type.Integer({ minimum: MIN_VOLUME_MIB, maximum: MAX_VOLUME_MIB, description: 'size in MiB' });

export const Volume = Type.Object(
  {
    id: Id,
    name: Type.String(),
    application_id: Type.Union([Id, Type.Null()]),
    environment: Type.Union([Type.String(), Type.Null()]),
    mount_path: Type.String(),
    process_type: Type.String(),
    size_mib: Type.Integer(),
    usage: Type.Union([Type.Object({ used_bytes: Type.Integer(), size_bytes: Type.Integer() }), Type.Null()], {
      description: "the disk's file system as it is now (journal and metadata included); null where it is not mounted on this machine",
    }),
    deploy_strategy: Type.Literal('stop-then-start', {
      description: 'the instance mounting it stops before the new one starts: the disk is never shared, and it is briefly unavailable',
    }),
    created: Timestamp,
    updated: Timestamp,
  },
  { $id: 'Volume' },
);

export const VolumeChange = Type.Object(
  {
    volume: Volume,
    deployment_id: Type.Union([Id, Type.Null()], {
      description: 'the deployment (of the current release) that mounts or unmounts it; null when the environment serves nothing yet',
    }),
  },
  { $id: 'VolumeChange' },
);

export const CreateVolumeBody = Type.Object(
  {
    name: Name,
    mount_path: Type.String({ minLength: 1, maxLength: 200, description: 'absolute path inside the instances, e.g. /data' }),
    size_mib: SizeMiB,
    process_type: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,63}$', description: 'the process type that mounts it (web)' })),
    environment: Type.Optional(Type.String({ description: "environment slug or id (the project's production when unset)" })),
  },
  { additionalProperties: false },
);

export const ResizeVolumeBody = Type.Object({ size_mib: SizeMiB }, { additionalProperties: false });

export const VolumeParams = Type.Object({ application_id: Id, volume: Type.String({ minLength: 1, maxLength: 64 }) });
export const VolumeQuery = Type.Object({ environment: Type.Optional(Type.String()) });

export const OrganizationVolumeParams = Type.Object({ org_slug: Slug, volume_id: Type.String({ minLength: 1, maxLength: 64 }) });

export const AttachVolumeBody = Type.Object(
  {
    application_id: Type.String({ format: 'uuid', description: 'an application of the same organization' }),
    environment: Type.Optional(Type.String({ description: "environment slug or id (the project's production when unset)" })),
    name: Type.Optional(Name),
    mount_path: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'default: where it was mounted before' })),
    process_type: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,63}$', description: 'default: the one that mounted it before' })),
  },
  { additionalProperties: false },
);
