import { join } from 'node:path';
import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import { AddonSupervisor, type AddonBackend } from '../../platform/addons/index.js';
// Types only: the Kubernetes modules (and their client, ~65 MiB) load only with RUNTIME=kubernetes.
import type { KubernetesRuntime } from '../../platform/runtime/kubernetes/kubernetes-runtime.js';
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
  // CloudNativePG's own, to an object store: none until S3-compatible storage is configured.
  const runtime = ctx.runtime?.name === 'kubernetes' ? (ctx.runtime as KubernetesRuntime) : null;
  const backend: AddonBackend | null =
    runtime !== null
      ? runtime.createAddons({
          db: ctx.db,
          secrets: ctx.secrets,
          cluster: runtime.cluster,
          namespaceOf: (slug) => runtime.namespaceOf(slug),
          ensureNamespace: (namespace) => runtime.ensureOrganizationNamespace(namespace),
          objectStore: null,
          backupIntervalHours: ctx.config.ADDONS_BACKUP_INTERVAL_HOURS,
          log: deps.log.child({ component: 'addons' }),
        })
      : supervisor;
  const addons = new AddonsService(ctx.db, deps.repository, ctx.secrets, deps.scope, deps.apps, deps.releases, deps.deployments, backend, {
    portRange: parseUidRange(ctx.config.ADDONS_PORT_RANGE.replace(/^\s*(\d+)/, (_, n: string) => String(Math.max(10_000, Number(n))))),
    deleteGraceHours: ctx.config.ADDONS_DELETE_GRACE_HOURS,
  });
  const backups = new AddonBackupsService(ctx.db, deps.repository, ctx.secrets, addons, supervisor, {
    intervalHours: ctx.config.ADDONS_BACKUP_INTERVAL_HOURS,
    retentionDays: ctx.config.ADDONS_BACKUP_RETENTION_DAYS,
    drillIntervalHours: ctx.config.ADDONS_RESTORE_DRILL_INTERVAL_HOURS,
  });
  return {
    addons,
    addonBackups: backups,
    addonSupervisor: backend,
    routes: [addonsRoutes(addons), backupsRoutes(backups)],
    sweepers: [{ sweep: () => addons.purgeExpired() }, { sweep: () => backups.sweep(), everyMs: 60_000 }],
  } satisfies Wired;
}
