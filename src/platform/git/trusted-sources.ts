import type { Db } from '../db/database.js';
import { invalid } from '../errors.js';
import { SourceError } from './source.js';
import { checkMemberSource, checkSourceOnSave, type FetchPins, type SourcePolicyConfig } from './source-policy.js';

export interface RepositoryChange {
  userId: string;
  applicationId: string;
  repository: string | null;
}

/**
 * On save of `github_repository`: refuses (400) what the user may not build from; what an
 * administrator saves is remembered as trusted for that application, exactly that value.
 */
export async function vetRepositoryChange(db: Db, config: SourcePolicyConfig, change: RepositoryChange): Promise<void> {
  const admin = await vetRepositoryFor(db, config, change.userId, change.repository);
  if (admin && change.repository) {
    await db
      .insertInto('trusted_sources')
      .values({ application_id: change.applicationId, repository: change.repository, approved_by: change.userId })
      .onConflict((oc) =>
        oc.column('application_id').doUpdateSet({ repository: change.repository!, approved_by: change.userId, approved_at: new Date() }),
      )
      .execute();
  } else {
    await db.deleteFrom('trusted_sources').where('application_id', '=', change.applicationId).execute();
  }
}

/** Refuses (422) a repository this user may not build from, before anything is saved; answers whether they are a site admin. */
export async function vetRepositoryFor(db: Db, config: SourcePolicyConfig, userId: string, repository: string | null): Promise<boolean> {
  const user = await db.selectFrom('users').select('is_admin').where('id', '=', userId).executeTakeFirst();
  const admin = user?.is_admin === true;
  try {
    await checkSourceOnSave(repository, admin, config);
  } catch (err) {
    if (err instanceof SourceError) throw invalid('github_repository', err.message.replace(/^github_repository:?\s*/, ''));
    throw err;
  }
  return admin;
}

/** At build time: an administrator's saved value as is; anything else under the member rules (checked again now). */
export async function checkSourceAtBuild(
  db: Db,
  config: SourcePolicyConfig,
  applicationId: string,
  repository: string,
): Promise<FetchPins> {
  const trusted = await db
    .selectFrom('trusted_sources')
    .select('repository')
    .where('application_id', '=', applicationId)
    .executeTakeFirst();
  if (trusted?.repository === repository) return { followRedirects: true };
  return checkMemberSource(repository, config);
}
