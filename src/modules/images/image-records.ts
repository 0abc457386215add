import type { Db } from '../../platform/db/database.js';
import { ImagesRepository } from './images.repository.js';

/**
 * Image records as the later pipeline stages read them: a release freezes the latest built
 * image, a promotion copies a release's image. Reads only: images are written by this module.
 */
export function imageRecords(db: Db) {
  const images = new ImagesRepository(db);
  return {
    findById: (id: string) => images.findById(id),
    latestBuilt: (applicationId: string) => images.latestBuilt(applicationId),
  };
}
export type ImageRecords = ReturnType<typeof imageRecords>;
