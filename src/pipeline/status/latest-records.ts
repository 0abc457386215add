import { jsonObjectFrom } from 'kysely/helpers/postgres';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { precompiled } from '../../platform/db/precompiled.js';
import type { LatestRecords, LatestRecordsSource } from '../../modules/applications/index.js';

/** Timestamps inside JSON arrive as PostgreSQL text; the API speaks ISO-8601 UTC. */
const isoText = (t: string | Date) => new Date(t).toISOString();

/**
 * The newest image, release and deployment of each application (releases and
 * deployments of every environment, or of the one of slug `environmentSlug`; an
 * application whose project has none of that slug is left out), for the application
 * list and detail: one query, whatever the number of applications (it is on the detail's hot path).
 */
export function latestRecordsSource(db: Db): LatestRecordsSource {
  // Compiled once per shape: this query runs on every application detail (one application), and
  // is prepared per connection. A detail's shape has no array parameter and no null constant, so
  // PostgreSQL settles on the generic plan instead of planning it again on every request.
  const queries = {
    detail: latestRecordsQuery(db, false, 'one'),
    detailInEnvironment: latestRecordsQuery(db, true, 'one'),
    list: latestRecordsQuery(db, false, 'many'),
    listInEnvironment: latestRecordsQuery(db, true, 'many'),
  };
  return async (applicationIds, environmentSlug) => {
    const result = new Map<string, LatestRecords>();
    if (applicationIds.length === 0) return result;
    const one = applicationIds.length === 1;
    // No slug is empty: in every environment, `only` matches nothing.
    const environment = environmentSlug ?? '';
    const rows = one
      ? await (environmentSlug === undefined ? queries.detail : queries.detailInEnvironment)({ ids: applicationIds[0]!, environment })
      : await (environmentSlug === undefined ? queries.list : queries.listInEnvironment)({ ids: applicationIds, environment });
    for (const row of rows) {
      if (environmentSlug !== undefined && !row.only_id) continue;
      result.set(row.id, latestOf(row));
    }
    return result;
  };
}

type LatestRow = Awaited<ReturnType<ReturnType<typeof latestRecordsQuery>>>[number];

/** The API's shape of a row's image, release and deployment JSON. */
export function latestOf({ image, release, deployment }: Pick<LatestRow, 'image' | 'release' | 'deployment'>): LatestRecords {
  return {
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
      environment: release.environment,
    },
    latest_deployment: deployment && {
      id: deployment.id,
      release_version: deployment.release_version,
      complete: deployment.complete,
      error: deployment.error,
      created: isoText(deployment.created_at),
      environment: deployment.environment,
    },
  };
}

/** The newest records of each application in `ids`, of every environment or of the one of slug `environment`. */
function latestRecordsQuery(db: Db, oneEnvironment: boolean, applications: 'one' | 'many') {
  return precompiled(db, ['ids', 'environment'], ({ ids, environment }: { ids: string | string[]; environment: string }) =>
    db
      .selectFrom('applications as a')
      .leftJoin('environments as only', (j) => j.onRef('only.project_id', '=', 'a.project_id').on('only.slug', '=', environment))
      .select((eb) => [
        'a.id',
        'only.id as only_id',
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
            .select(['r.id', 'r.version', 'r.built', 'r.error', 'r.created_at', 'r.environment_slug as environment'])
            .whereRef('r.application_id', '=', 'a.id')
            .where((w) => (oneEnvironment ? w('r.environment_id', '=', w.ref('only.id')) : w.lit(true)))
            .orderBy('r.version', 'desc')
            .limit(1),
        ).as('release'),
        jsonObjectFrom(
          eb
            .selectFrom('deployments as d')
            .select(['d.id', 'd.release_version', 'd.complete', 'd.error', 'd.created_at', 'd.environment_slug as environment'])
            .whereRef('d.application_id', '=', 'a.id')
            .where((w) => (oneEnvironment ? w('d.environment_id', '=', w.ref('only.id')) : w.lit(true)))
            // Ids are time-ordered (UUIDv7 taken when the request arrived): the index serves this.
            .orderBy('d.id', 'desc')
            .limit(1),
        ).as('deployment'),
      ])
      .where(applications === 'one' ? sql<boolean>`a.id = ${ids}` : sql<boolean>`a.id = any(${ids}::uuid[])`),
  );
}
