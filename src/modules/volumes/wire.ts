import { join } from 'node:path';
import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import { VolumeDisks } from '../../platform/volumes/index.js';
import type { ApplicationsService } from '../applications/index.js';
import type { OrganizationScope } from '../organizations/index.js';
import type { DeploymentsService } from '../../pipeline/index.js';
import type { VolumesRepository } from './volumes.repository.js';
import { volumesRoutes } from './volumes.routes.js';
import { VolumesService } from './volumes.service.js';
import { DetachedVolumesService } from './detached.service.js';
import { detachedVolumesRoutes } from './detached.routes.js';

/**
 * Persistent volumes. Their disks live where the local runtime runs with its sandbox (the same
 * DATA_DIR/volumes the runtime mounts from); elsewhere only the records are kept here.
 */
export function wireVolumes(deps: {
  ctx: AppContext;
  repository: VolumesRepository;
  apps: ApplicationsService;
  scope: OrganizationScope;
  deployments: DeploymentsService;
  /** The organization's disk quota counts its volumes at their size. */
  requireRoom: (organizationId: string, bytes: number) => Promise<void>;
}) {
  const { ctx } = deps;
  const local = ctx.runtime !== undefined && ctx.config.RUNTIME === 'local' && ctx.config.SLIPWAY_ROLE === 'all';
  const machine = local && ctx.config.RUNTIME_ISOLATION !== 'none' ? { disks: new VolumeDisks(join(ctx.config.dataDir, 'volumes')) } : null;
  const volumes = new VolumesService(ctx.db, deps.repository, deps.apps, deps.deployments, machine, deps.requireRoom);
  const detached = new DetachedVolumesService(ctx.db, deps.repository, deps.scope, deps.apps, volumes, machine?.disks ?? null);
  return { volumes, routes: [volumesRoutes(volumes), detachedVolumesRoutes(detached)] } satisfies Wired;
}
