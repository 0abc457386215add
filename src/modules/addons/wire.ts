import { join } from 'node:path';
import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import { AddonSupervisor, ObjectStore, type AddonBackend } from '../../platform/addons/index.js';
// Types only: the Kubernetes client (~65 MiB) loads only with RUNTIME=kubernetes; the client-free
// manifest and backup helpers may be imported as values (see .dependency-cruiser.cjs).
import type { KubernetesRuntime } from '../../platform/runtime/kubernetes/kubernetes-runtime.js';
import { objectStoreFromSettings } from '../../platform/runtime/kubernetes/addon-backups.js';
import { createSandbox } from '../../platform/sandbox/index.js';
import { parseUidRange } from '../../platform/sandbox/uid-allocator.js';
import type { ApplicationsService } from '../applications/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import type { DeploymentsService, ReleasesService } from '../../pipeline/index.js';
import type { AddonsRepository } from './addons.repository.js';
import { addonsRoutes } from './addons.routes.js';
import { AddonsService } from './addons.service.js';
import { backupsRoutes } from './backups.routes.js';
import { AddonBackupsService } from './backups.service.js';
import { S3Backups } from './backups-s3.js';
import { KubernetesBackups } from './kube-backups.js';
import { DiskRoom } from './disk-room.js';

/**
 * Add-ons. Their servers run where the local runtime runs with its sandbox (role `all`); the
 * supervisor is built here and started by src/lifecycle.ts (it adopts what a previous process left).
 */
export function wireAddons(deps: {
  ctx: AppContext;
  repository: AddonsRepository;
  scope: OrganizationScope;
  apps: ApplicationsService;
  releases: ReleasesService;
  deployments: DeploymentsService;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const local = ctx.runtime !== undefined && ctx.config.RUNTIME === 'local' && ctx.config.SLIPWAY_ROLE === 'all';
  const sandbox = local ? createSandbox(ctx.config, ctx.db) : null;
  const supervisor = sandbox
    ? new AddonSupervisor(ctx.db, ctx.secrets, sandbox, join(ctx.config.dataDir, 'addons'), deps.log.child({ component: 'addons' }))
    : null;
  // RUNTIME=kubernetes: the cluster runs them (CloudNativePG, StatefulSets). Backups there are
  // CloudNativePG's own, to the object store of BACKUP_S3_* (none without it).
  const runtime = ctx.runtime?.name === 'kubernetes' ? (ctx.runtime as KubernetesRuntime) : null;
  const objectStore = runtime ? objectStoreFromSettings(ctx.config) : null;
  const kubeAddons =
    runtime !== null
      ? runtime.createAddons({
          db: ctx.db,
          secrets: ctx.secrets,
          cluster: runtime.cluster,
          namespaceOf: (slug) => runtime.namespaceOf(slug),
          ensureNamespace: (namespace) => runtime.ensureOrganizationNamespace(namespace),
          objectStore,
          backupIntervalHours: ctx.config.ADDONS_BACKUP_INTERVAL_HOURS,
          log: deps.log.child({ component: 'addons' }),
        })
      : null;
  const backend: AddonBackend | null = kubeAddons ?? supervisor;
  // The local runtime keeps add-ons' data and backups on DATA_DIR's disk: each new one must fit.
  const room = supervisor && !kubeAddons ? new DiskRoom(ctx.config.dataDir) : null;
  const kubeBackups =
    kubeAddons && runtime
      ? new KubernetesBackups({ db: ctx.db, repo: deps.repository, secrets: ctx.secrets, backend: kubeAddons, runtime, store: objectStore })
      : null;
  const addons = new AddonsService(ctx.db, deps.repository, ctx.secrets, deps.scope, deps.apps, deps.releases, deps.deployments, backend, {
    portRange: parseUidRange(ctx.config.ADDONS_PORT_RANGE.replace(/^\s*(\d+)/, (_, n: string) => String(Math.max(10_000, Number(n))))),
    deleteGraceHours: ctx.config.ADDONS_DELETE_GRACE_HOURS,
    room,
  });
  const backups = new AddonBackupsService(
    ctx.db,
    deps.repository,
    ctx.secrets,
    addons,
    supervisor,
    {
      intervalHours: ctx.config.ADDONS_BACKUP_INTERVAL_HOURS,
      retentionDays: ctx.config.ADDONS_BACKUP_RETENTION_DAYS,
      drillIntervalHours: ctx.config.ADDONS_RESTORE_DRILL_INTERVAL_HOURS,
      room,
      log: deps.log.child({ component: 'addons' }),
    },
    supervisor && ctx.config.BACKUP_S3_ENDPOINT
      ? new S3Backups(objectStoreOf(ctx.config), supervisor, ctx.config.BACKUP_S3_WAL_CAP_MB * 1024 * 1024)
      : null,
    kubeBackups,
  );
  return {
    addons,
    addonBackups: backups,
    addonSupervisor: backend,
    routes: [addonsRoutes(addons), backupsRoutes(backups)],
    sweepers: [
      { sweep: () => addons.purgeExpired() },
      { sweep: () => backups.sweep(), everyMs: 60_000 },
      ...(kubeAddons ? [{ sweep: () => kubeAddons.retryPolicies() }] : []),
    ],
  } satisfies Wired;
}

/** The S3-compatible store of BACKUP_S3_* (checked complete at start: see loadConfig). */
export function objectStoreOf(config: AppContext['config']): ObjectStore {
  return new ObjectStore({
    endpoint: config.BACKUP_S3_ENDPOINT!,
    bucket: config.BACKUP_S3_BUCKET!,
    region: config.BACKUP_S3_REGION,
    prefix: config.BACKUP_S3_PREFIX,
    accessKeyId: config.BACKUP_S3_ACCESS_KEY_ID!,
    secretAccessKey: config.BACKUP_S3_SECRET_ACCESS_KEY!,
    forcePathStyle: config.BACKUP_S3_FORCE_PATH_STYLE,
  });
}
