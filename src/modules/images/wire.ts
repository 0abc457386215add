import type { Builder } from '../../platform/builder/index.js';
import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { ConfigurationsService } from '../configurations/index.js';
import { imageRecords } from './image-records.js';
import type { ImagesRepository } from './images.repository.js';
import { imagesRoutes } from './images.routes.js';
import { ImagesService } from './images.service.js';

/** The build stage: builders in order of preference; its job kind is registered wherever a job store is open. */
export function wireImages(deps: {
  ctx: AppContext;
  repository: ImagesRepository;
  apps: ApplicationsService;
  config: ConfigurationsService;
  builders: Builder[];
  requireBuildRoom: (applicationId: string) => Promise<void>;
}) {
  const images = new ImagesService(deps.ctx, deps.repository, deps.apps, deps.config, deps.builders, deps.requireBuildRoom);
  if (deps.ctx.jobs) images.registerJobs(deps.ctx.jobs);
  return { images, imageSource: imageRecords(deps.repository), routes: [imagesRoutes(images)] } satisfies Wired;
}
