import { Type } from 'typebox';
import { Id, MAX_PAGE, Name, Slug, Timestamp } from '../../platform/http/schemas.js';
import { POD_CLASS_NAMES } from './pod-classes.js';

export const PLATFORMS = ['wind', 'steam', 'diesel', 'stirling', 'nuclear', 'electric'] as const;
export const PROCESS_TYPE_PATTERN = '^[a-z][a-z0-9_-]{0,62}$';

const ProcessType = Type.String({ pattern: PROCESS_TYPE_PATTERN });
export const ProcessCounts = Type.Record(ProcessType, Type.Integer({ minimum: 0, maximum: 100 }), { additionalProperties: false });
export const ProcessPodClasses = Type.Record(ProcessType, Type.Union(POD_CLASS_NAMES.map((n) => Type.Literal(n))), {
  additionalProperties: false,
});

const ImageRef = Type.Object({ id: Id, version: Type.Integer(), built: Type.Boolean(), error: Type.Boolean(), created: Timestamp });
const EnvironmentSlug = Type.String({ description: 'the slug of the environment the record belongs to' });
const ReleaseRef = Type.Object({ ...ImageRef.properties, environment: EnvironmentSlug });
const DeploymentRef = Type.Object({
  id: Id,
  release_version: Type.Union([Type.Integer(), Type.Null()]),
  complete: Type.Boolean(),
  error: Type.Boolean(),
  created: Timestamp,
  environment: EnvironmentSlug,
});

export const ApplicationSummary = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    project_id: Id,
    platform: Type.String(),
    created: Timestamp,
    latest_image_version: Type.Union([Type.Integer(), Type.Null()]),
    latest_release_version: Type.Union([Type.Integer(), Type.Null()]),
    latest_deployment_complete: Type.Union([Type.Boolean(), Type.Null()]),
  },
  { $id: 'ApplicationSummary' },
);

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const ApplicationDetail = Type.Object(
  {
    id: Id,
    name: Type.String(),
    slug: Type.String(),
    project_id: Id,
    project_slug: Type.String(),
    organization_slug: Type.String(),
    platform: Type.String(),
    process_counts: Type.Record(Type.String(), Type.Integer()),
    process_pod_classes: Type.Record(Type.String(), Type.String()),
    github_repository: NullableString,
    github_repository_is_private: Type.Boolean(),
    auto_deploy_branch: NullableString,
    subdirectory: NullableString,
    github_app_installation_id: Type.Union([Type.Integer(), Type.Null()]),
    github_environment_name: NullableString,
    deployment_timeout: Type.Integer({ description: 'seconds' }),
    health_check_path: Type.String(),
    health_check_host: NullableString,
    health_check_timeout: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'seconds a new web instance may take to answer its health check; null: the platform default (HEALTH_CHECK_TIMEOUT_SECONDS)',
    }),
    stability_window: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'seconds new instances must keep running once healthy before traffic switches and the deployment completes; null: the platform default (DEPLOY_STABILITY_WINDOW_SECONDS)',
    }),
    privileged: Type.Boolean(),
    start_command: Type.Union([Type.String(), Type.Null()], {
      description: "replaces the web process's command from the next release; null: the image's (or its Procfile's)",
    }),
    created: Timestamp,
    updated: Timestamp,
    latest_image: Type.Union([ImageRef, Type.Null()]),
    latest_release: Type.Union([ReleaseRef, Type.Null()]),
    latest_deployment: Type.Union([DeploymentRef, Type.Null()]),
  },
  { $id: 'ApplicationDetail' },
);

export const CreateApplicationBody = Type.Object(
  {
    name: Name,
    slug: Type.Optional(Slug),
    project_id: Type.String({ format: 'uuid' }),
    platform: Type.Optional(
      Type.Union(
        PLATFORMS.map((p) => Type.Literal(p)),
        { default: 'wind' },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The bound of an application's start command (the column checks it too, migration 0057). */
export const MAX_START_COMMAND = 4096;

const NullableText = (maxLength: number, extra: object = {}) =>
  Type.Union([Type.String({ minLength: 1, maxLength, ...extra }), Type.Null()]);

export const SettingsBody = Type.Object(
  {
    name: Type.Optional({ ...Name, description: 'Its display name (the slug, in its paths and host names, stays)' }),
    github_repository: Type.Optional(NullableText(1024, { description: 'owner/repo, a git URL, or a local path' })),
    github_repository_is_private: Type.Optional(Type.Boolean()),
    auto_deploy_branch: Type.Optional(NullableText(255, { pattern: '^[A-Za-z0-9._/-]+$' })),
    subdirectory: Type.Optional(
      NullableText(1024, { pattern: '^(?!/)(?!.*(^|/)\\.\\.(/|$)).+$', description: 'relative path inside the repository' }),
    ),
    github_app_installation_id: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    github_environment_name: Type.Optional(NullableText(255)),
    deployment_timeout: Type.Optional(Type.Integer({ minimum: 5, maximum: 3600 })),
    health_check_path: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: '^/' })),
    health_check_host: Type.Optional(NullableText(255, { pattern: '^[A-Za-z0-9.-]+(:\\d+)?$' })),
    health_check_timeout: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: 3600 }), Type.Null()], {
        description: 'seconds (1-3600; the deployment_timeout still bounds it); null: the platform default',
      }),
    ),
    stability_window: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0, maximum: 600 }), Type.Null()], {
        description: 'seconds (0-600; 0: none); null: the platform default',
      }),
    ),
    start_command: Type.Optional(
      NullableText(MAX_START_COMMAND, {
        pattern: '^[^\\r\\n\\u0000]+$',
        description:
          "the web process's command (run by sh -c), one line; live with the next release (config-release, no build); null: the image's or Procfile's",
      }),
    ),
  },
  { additionalProperties: false },
);

export const ScaleBody = Type.Object(
  { process_counts: Type.Optional(ProcessCounts), process_pod_classes: Type.Optional(ProcessPodClasses) },
  { additionalProperties: false },
);

export const ApplicationIdParams = Type.Object({ application_id: Type.String({ format: 'uuid' }) });
export const ApplicationSlugParams = Type.Object({ org_slug: Slug, project_slug: Slug, app_slug: Slug });

/** The application list is an array (the API's contract) read in pages; `Link: <…>; rel="next"` says when more follow. */
export const ApplicationListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
});
