import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { isoText } from '../../platform/db/json-answers.js';
import { precompiled } from '../../platform/db/precompiled.js';
import type { ApplicationDetailSource } from '../../modules/applications/index.js';

/**
 * The application detail's one statement (issue 35): the application by its slugs, for a member of its
 * organization, with its newest image, release and deployment, written by PostgreSQL as the answer's
 * JSON text (ApplicationDetail, as ApplicationsService's `shape` and `latestOf` write it; a test holds the
 * two equal). Node sends it as it is: no row of every column to parse, no dates parsed and formatted again,
 * no serializing. The newest release and deployment name their environment and release version from their own
 * columns (migration 0066), so the statement joins nothing for them. Prepared per connection; the plain `a.id = …`
 * correlations keep PostgreSQL on a generic plan. Answers nothing when any level is missing or the caller is no member: the caller's slower path then
 * tells which (404 or 403).
 */
export function applicationDetailSource(db: Db): ApplicationDetailSource {
  const query = precompiled(
    db,
    ['orgSlug', 'projectSlug', 'appSlug', 'userId'],
    ({ orgSlug, projectSlug, appSlug, userId }: { orgSlug: string; projectSlug: string; appSlug: string; userId: string }) => ({
      compile: () =>
        sql<{ body: string }>`
          select json_build_object(
            'id', a.id, 'name', a.name, 'slug', a.slug, 'project_id', a.project_id, 'project_slug', p.slug,
            'organization_slug', o.slug, 'platform', a.platform, 'process_counts', a.process_counts,
            'process_pod_classes', a.process_pod_classes, 'github_repository', a.github_repository,
            'github_repository_is_private', a.github_repository_is_private, 'auto_deploy_branch', a.auto_deploy_branch,
            'subdirectory', a.subdirectory, 'github_app_installation_id', a.github_app_installation_id,
            'github_environment_name', a.github_environment_name, 'deployment_timeout', a.deployment_timeout,
            'health_check_path', a.health_check_path, 'health_check_host', a.health_check_host,
            'health_check_timeout', a.health_check_timeout, 'stability_window', a.stability_window,
            'privileged', a.privileged, 'start_command', a.start_command,
            'created', ${isoText('a.created_at')}, 'updated', ${isoText('a.updated_at')},
            'latest_image', (select json_build_object('id', i.id, 'version', i.version, 'built', i.built, 'error', i.error,
                                                      'created', ${isoText('i.created_at')})
               from images i where i.application_id = a.id order by i.version desc limit 1),
            'latest_release', (select json_build_object('id', r.id, 'version', r.version, 'built', r.built, 'error', r.error,
                                                        'created', ${isoText('r.created_at')}, 'environment', r.environment_slug)
               from releases r where r.application_id = a.id order by r.version desc limit 1),
            'latest_deployment', (select json_build_object('id', d.id, 'release_version', d.release_version, 'complete', d.complete,
                                                           'error', d.error, 'created', ${isoText('d.created_at')}, 'environment', d.environment_slug)
               from deployments d where d.application_id = a.id order by d.id desc limit 1)
          )::text as body
          from organizations o
          join projects p on p.organization_id = o.id and p.slug = ${projectSlug}
          join applications a on a.project_id = p.id and a.slug = ${appSlug}
          join memberships m on m.organization_id = o.id and m.user_id = ${userId}
          where o.slug = ${orgSlug}`.compile(db),
    }),
  );
  return async (userId, orgSlug, projectSlug, appSlug) => {
    const [row] = await query({ orgSlug, projectSlug, appSlug, userId });
    return row?.body;
  };
}
