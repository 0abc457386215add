import type { ImagesRepository } from './images.repository.js';

/**
 * Image records as the later pipeline stages read them: a release freezes the latest built
 * image, a promotion copies a release's image. Reads only: images are written by this module.
 */
export function imageRecords(images: ImagesRepository) {
  return {
    findById: (id: string) => images.findById(id),
    latestBuilt: (applicationId: string, environmentId: string, preview: boolean) =>
      images.latestBuilt(applicationId, environmentId, preview),
  };
}
export type ImageRecords = ReturnType<typeof imageRecords>;
