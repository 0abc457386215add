import type { AppContext } from '../../platform/context.js';
import type { PlatformLogger, Wired } from '../../platform/wiring.js';
import type { OrganizationsService } from '../organizations/index.js';
import type { StorageRepository } from './storage.repository.js';
import { storageRoutes } from './storage.routes.js';
import { StorageService } from './storage.service.js';

/** Disk use per organization, its quota (new builds refused over it) and garbage collection (issue 27, class 5). */
export function wireStorage(deps: {
  ctx: AppContext;
  repository: StorageRepository;
  organizations: OrganizationsService;
  buildStorageRoot: string;
  removeBuildImage: (applicationId: string, repositoryName: string, version: number) => Promise<void>;
  log: PlatformLogger;
}) {
  const { ctx } = deps;
  const storage = new StorageService(ctx, deps.repository, deps.organizations, {
    defaultQuotaMb: ctx.config.ORG_DISK_QUOTA_MB,
    keepPerEnvironment: ctx.config.RELEASES_KEPT_PER_ENVIRONMENT,
    buildStorageRoot: deps.buildStorageRoot,
    maxAgeMs: ctx.config.STORAGE_SWEEP_SECONDS * 1000,
    removeBuildImage: deps.removeBuildImage,
    logger: deps.log.child({ component: 'storage' }),
  });
  // A deploy is what leaves older releases unreferenced: collect the application's at once.
  ctx.jobs?.afterJobs(async (data) => {
    if (data.kind === 'deploy' || data.kind === 'chain') await storage.afterDeploy(data.applicationId);
  });
  const sweepers = [{ sweep: () => storage.sweep(), everyMs: ctx.config.STORAGE_SWEEP_SECONDS * 1000 }];
  return { storage, routes: [storageRoutes(storage)], sweepers } satisfies Wired;
}
