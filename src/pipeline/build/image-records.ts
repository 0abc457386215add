import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
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

export interface CollectedImage {
  id: string;
  application_id: string;
  version: number;
  repository_name: string;
  builder: string | null;
}

/**
 * Garbage collection's choice and write in one statement (so a deploy queued meanwhile is
 * seen): marks collected and returns the application's images that nothing needs any more.
 * Kept: the newest built image of each environment (its next release ships it), images still building, and every
 * image a release references that is among the last `keepPerEnvironment` built releases of
 * its environment, is still being made, is deployed by a deployment not yet finished, serves
 * its environment (its latest complete deployment), has instances or a one-off run waiting or
 * running on it. The caller then removes the returned images' files.
 */
export async function collectUnreferencedImages(db: Db, applicationId: string, keepPerEnvironment: number): Promise<CollectedImage[]> {
  const { rows } = await sql<CollectedImage>`
    WITH ranked AS (
      SELECT r.id, r.image_ref, r.status, r.environment_id,
             row_number() OVER (PARTITION BY r.environment_id ORDER BY r.version DESC) AS n
      FROM releases r WHERE r.application_id = ${applicationId} AND r.built
    ), serving AS (
      SELECT DISTINCT ON (d.environment_id) d.release_id FROM deployments d
      WHERE d.application_id = ${applicationId} AND d.status = 'complete'
      ORDER BY d.environment_id, d.finished_at DESC NULLS LAST, d.created_at DESC
    ), needed AS (
      SELECT image_ref FROM ranked WHERE n <= ${keepPerEnvironment}
      UNION SELECT r.image_ref FROM releases r WHERE r.application_id = ${applicationId} AND r.status = 'building'
      UNION SELECT r.image_ref FROM releases r JOIN deployments d ON d.release_id = r.id
        WHERE d.application_id = ${applicationId} AND d.status NOT IN ('complete', 'error', 'rolled_back')
      UNION SELECT r.image_ref FROM releases r JOIN serving s ON s.release_id = r.id
      UNION SELECT r.image_ref FROM releases r JOIN instances i ON i.release_id = r.id
        WHERE i.application_id = ${applicationId} AND i.state IN ('starting', 'healthy', 'running')
      -- A one-off waiting or running on a release still needs its tree (its process may be writing it).
      UNION SELECT r.image_ref FROM releases r JOIN one_off_runs o ON o.release_id = r.id
        WHERE o.application_id = ${applicationId} AND o.status IN ('pending', 'running')
      -- The newest built image of each environment (a preview's own, production's): what its next release ships.
      UNION SELECT newest.id FROM (
        SELECT DISTINCT ON (environment_id, built_for_preview) id FROM images
        WHERE application_id = ${applicationId} AND built ORDER BY environment_id, built_for_preview, version DESC
      ) newest
    )
    UPDATE images i SET collected_at = now()
    WHERE i.application_id = ${applicationId} AND i.collected_at IS NULL AND i.built AND i.status <> 'building'
      AND i.id NOT IN (SELECT image_ref FROM needed WHERE image_ref IS NOT NULL)
    RETURNING i.id, i.application_id, i.version, i.repository_name, i.image_metadata->>'builder' AS builder`.execute(db);
  return rows;
}
