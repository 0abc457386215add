import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { precompiled } from '../../platform/db/precompiled.js';
import type { ApplicationDetailSource, ApplicationRow } from '../../modules/applications/index.js';
import { latestOf } from './latest-records.js';

type Row = ApplicationRow & {
  member_id: string | null;
  image: Parameters<typeof latestOf>[0]['image'];
  release: Parameters<typeof latestOf>[0]['release'];
  deployment: Parameters<typeof latestOf>[0]['deployment'];
};

/**
 * The application detail's one statement (issue 35): the application by its slugs with the
 * caller's membership and its newest image, release and deployment, where it used to take two
 * round trips (the application, then its latest records). Prepared per connection; the plain
 * `a.id = …` correlations keep PostgreSQL on a generic plan. Answers nothing when any level is
 * missing or the caller is no member: the caller's slower path then tells which (404 or 403).
 */
export function applicationDetailSource(db: Db): ApplicationDetailSource {
  const query = precompiled(
    db,
    ['orgSlug', 'projectSlug', 'appSlug', 'userId'],
    ({ orgSlug, projectSlug, appSlug, userId }: { orgSlug: string; projectSlug: string; appSlug: string; userId: string }) => ({
      compile: () =>
        sql<Row>`
          select a.*, o.id as organization_id, o.slug as organization_slug, p.slug as project_slug, m.user_id as member_id,
            (select row_to_json(i) from (select id, version, built, error, created_at from images
               where application_id = a.id order by version desc limit 1) i) as image,
            (select row_to_json(r) from (select r.id, r.version, r.built, r.error, r.created_at, re.slug as environment
               from releases r join environments re on re.id = r.environment_id
               where r.application_id = a.id order by r.version desc limit 1) r) as release,
            (select row_to_json(d) from (select d.id, dr.version as release_version, d.complete, d.error, d.created_at,
                 de.slug as environment
               from deployments d join releases dr on dr.id = d.release_id join environments de on de.id = d.environment_id
               where d.application_id = a.id order by d.id desc limit 1) d) as deployment
          from organizations o
          join projects p on p.organization_id = o.id and p.slug = ${projectSlug}
          join applications a on a.project_id = p.id and a.slug = ${appSlug}
          left join memberships m on m.organization_id = o.id and m.user_id = ${userId}
          where o.slug = ${orgSlug}`.compile(db),
    }),
  );
  return async (userId, orgSlug, projectSlug, appSlug) => {
    const [row] = await query({ orgSlug, projectSlug, appSlug, userId });
    if (!row?.member_id) return undefined;
    const { member_id: _member, image, release, deployment, ...application } = row;
    return { application, latest: latestOf({ image, release, deployment }) };
  };
}
