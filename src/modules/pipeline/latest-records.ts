import type { Db } from '../../platform/db/database.js';
import { iso } from '../../platform/http/schemas.js';
import type { LatestRecords, LatestRecordsSource } from '../applications/applications.service.js';

/**
 * The newest image, release and deployment of each application (releases and
 * deployments of its production environment), for the application list and detail.
 * One query per record kind for any number of applications.
 */
export function latestRecordsSource(db: Db): LatestRecordsSource {
  return async (applicationIds) => {
    const result = new Map<string, LatestRecords>();
    if (applicationIds.length === 0) return result;
    const [images, releases, deployments] = await Promise.all([
      db.selectFrom('images').distinctOn('application_id')
        .select(['id', 'application_id', 'version', 'built', 'error', 'created_at'])
        .where('application_id', 'in', applicationIds)
        .orderBy('application_id').orderBy('version', 'desc').execute(),
      db.selectFrom('releases as r').innerJoin('environments as e', 'e.id', 'r.environment_id').distinctOn('r.application_id')
        .select(['r.id', 'r.application_id', 'r.version', 'r.built', 'r.error', 'r.created_at'])
        .where('r.application_id', 'in', applicationIds).where('e.env_type', '=', 'production')
        .orderBy('r.application_id').orderBy('r.version', 'desc').execute(),
      db.selectFrom('deployments as d').innerJoin('environments as e', 'e.id', 'd.environment_id')
        .innerJoin('releases as r', 'r.id', 'd.release_id').distinctOn('d.application_id')
        .select(['d.id', 'd.application_id', 'r.version as release_version', 'd.complete', 'd.error', 'd.created_at'])
        .where('d.application_id', 'in', applicationIds).where('e.env_type', '=', 'production')
        .orderBy('d.application_id').orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').execute(),
    ]);
    const entry = (id: string) => {
      let e = result.get(id);
      if (!e) result.set(id, (e = { latest_image: null, latest_release: null, latest_deployment: null }));
      return e;
    };
    for (const i of images) entry(i.application_id).latest_image = { id: i.id, version: i.version, built: i.built, error: i.error, created: iso(i.created_at) };
    for (const r of releases) entry(r.application_id).latest_release = { id: r.id, version: r.version, built: r.built, error: r.error, created: iso(r.created_at) };
    for (const d of deployments) {
      entry(d.application_id).latest_deployment = { id: d.id, release_version: d.release_version, complete: d.complete, error: d.error, created: iso(d.created_at) };
    }
    return result;
  };
}
