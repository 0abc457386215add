import { Type } from 'typebox';
import { Timestamp } from '../../platform/http/schemas.js';

const Bytes = Type.Integer({ minimum: 0 });

export const OrganizationUsage = Type.Object(
  {
    organization: Type.String({ description: "the organization's slug" }),
    total_bytes: Bytes,
    bytes: Type.Object({
      artifacts: Type.Integer({ minimum: 0, description: 'built images unpacked for running (DATA_DIR/images)' }),
      images: Type.Integer({ minimum: 0, description: "Dockerfile builds' storage (BUILDAH_STORAGE_ROOT/apps)" }),
      caches: Type.Integer({ minimum: 0, description: 'build caches (package managers, HOME of builds)' }),
      logs: Type.Integer({ minimum: 0, description: 'application output and build, release and deploy logs in the database' }),
      volumes: Type.Integer({ minimum: 0, description: 'persistent volumes, at their full size (a tenant may fill them)' }),
    }),
    quota_bytes: Type.Union([Bytes, Type.Null()], { description: 'null: no quota' }),
    over_quota: Type.Boolean({ description: 'new builds are refused (409) while true' }),
    releases_kept_per_environment: Type.Integer(),
    measured: Timestamp,
  },
  { $id: 'OrganizationUsage' },
);
