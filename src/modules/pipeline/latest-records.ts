import { jsonObjectFrom } from 'kysely/helpers/postgres';
import type { Db } from '../../platform/db/database.js';
import type { LatestRecords, LatestRecordsSource } from '../applications/index.js';

/** Timestamps inside JSON arrive as PostgreSQL text; the API speaks ISO-8601 UTC. */
const isoText = (t: string | Date) => new Date(t).toISOString();

/**
 * The newest image, release and deployment of each application (releases and
 * deployments of its production environment), for the application list and detail:
 * one query, whatever the number of applications (it is on the detail's hot path).
 */
export function latestRecordsSource(db: Db): LatestRecordsSource {
  return async (applicationIds) => {
    const result = new Map<string, LatestRecords>();
    if (applicationIds.length === 0) return result;
    const rows = await db
      .selectFrom('applications as a')
      .innerJoin('environments as prod', (j) => j.onRef('prod.project_id', '=', 'a.project_id').on('prod.slug', '=', 'production'))
      .select((eb) => [
        'a.id',
        jsonObjectFrom(
          eb
            .selectFrom('images as i')
            .select(['i.id', 'i.version', 'i.built', 'i.error', 'i.created_at'])
            .whereRef('i.application_id', '=', 'a.id')
            .orderBy('i.version', 'desc')
            .limit(1),
        ).as('image'),
        jsonObjectFrom(
          eb
            .selectFrom('releases as r')
            .select(['r.id', 'r.version', 'r.built', 'r.error', 'r.created_at'])
            .whereRef('r.application_id', '=', 'a.id')
            .whereRef('r.environment_id', '=', 'prod.id')
            .orderBy('r.version', 'desc')
            .limit(1),
        ).as('release'),
        jsonObjectFrom(
          eb
            .selectFrom('deployments as d')
            .innerJoin('releases as dr', 'dr.id', 'd.release_id')
            .select(['d.id', 'dr.version as release_version', 'd.complete', 'd.error', 'd.created_at'])
            .whereRef('d.application_id', '=', 'a.id')
            .whereRef('d.environment_id', '=', 'prod.id')
            .orderBy('d.created_at', 'desc')
            .orderBy('d.id', 'desc')
            .limit(1),
        ).as('deployment'),
      ])
      .where('a.id', 'in', applicationIds)
      .execute();
    for (const { id, image, release, deployment } of rows) {
      result.set(id, {
        latest_image: image && {
          id: image.id,
          version: image.version,
          built: image.built,
          error: image.error,
          created: isoText(image.created_at),
        },
        latest_release: release && {
          id: release.id,
          version: release.version,
          built: release.built,
          error: release.error,
          created: isoText(release.created_at),
        },
        latest_deployment: deployment && {
          id: deployment.id,
          release_version: deployment.release_version,
          complete: deployment.complete,
          error: deployment.error,
          created: isoText(deployment.created_at),
        },
      });
    }
    return result;
  };
}
