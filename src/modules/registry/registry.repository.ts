import type { Db } from '../../platform/db/database.js';

/** Reads the registry token service needs: which repositories a user may touch. */
export class RegistryRepository {
  constructor(private readonly db: Db) {}

  /**
   * The application named by `org/project/app` slugs, with whether `userId` is a member of
   * its organization; undefined when no such application exists.
   */
  async repositoryAccess(userId: string, orgSlug: string, projectSlug: string, appSlug: string) {
    return this.db
      .selectFrom('applications')
      .innerJoin('projects', 'projects.id', 'applications.project_id')
      .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
      .leftJoin('memberships', (join) =>
        join.onRef('memberships.organization_id', '=', 'organizations.id').on('memberships.user_id', '=', userId),
      )
      .select(['applications.id as application_id', 'memberships.user_id as member_id'])
      .where('organizations.slug', '=', orgSlug)
      .where('projects.slug', '=', projectSlug)
      .where('applications.slug', '=', appSlug)
      .executeTakeFirst();
  }

  /** The user behind an API key id, while the key exists and has not expired. */
  findApiKeyUser(apiKeyId: string) {
    return (
      this.db
        .selectFrom('api_keys')
        .innerJoin('users', 'users.id', 'api_keys.user_id')
        .select(['users.id', 'users.username', 'users.email', 'users.is_admin', 'api_keys.id as credential_id'])
        // The key's limits: tokens refreshed with it grant no more than the key itself.
        .select([
          'api_keys.organization_id',
          'api_keys.project_id',
          'api_keys.application_id',
          'api_keys.environment_id',
          'api_keys.actions',
        ])
        .where('api_keys.id', '=', apiKeyId)
        .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', new Date())]))
        .executeTakeFirst()
    );
  }
}
