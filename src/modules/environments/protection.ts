import type { Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { findProductionEnvironmentId } from '../pipeline/index.js';

/** The environment's slug when it is protected and the caller is not an admin of its workspace; else null. */
async function lockedOut(db: Db, userId: string, environmentId: string): Promise<string | null> {
  const row = await db.selectFrom('environments as e')
    .innerJoin('projects as p', 'p.id', 'e.project_id')
    .leftJoin('memberships as m', (j) => j.onRef('m.organization_id', '=', 'p.organization_id').on('m.user_id', '=', userId))
    .select(['e.slug', 'e.protected', 'm.admin'])
    .where('e.id', '=', environmentId)
    .executeTakeFirst();
  return row?.protected && !row.admin ? row.slug : null;
}

/**
 * Protected environments accept deploys only from workspace admins, whichever route the
 * deploy comes through: the environment's own `deploy`/`promote`, or the application-level
 * `POST /applications/{id}/deploy` and `POST /releases/{id}/deploy` (which would otherwise
 * let any member roll a protected environment to any of its releases). Callers have
 * already checked membership.
 */
export async function requireDeployAccess(db: Db, userId: string, environmentId: string): Promise<void> {
  const slug = await lockedOut(db, userId, environmentId);
  if (slug) throw new AppError('FORBIDDEN', `Environment '${slug}' is protected: only workspace admins deploy to it`);
}

/**
 * A push to the auto-deploy branch deploys without anyone asking: choosing that branch is
 * choosing what gets deployed, so on a protected environment (for an application's own
 * `auto_deploy_branch`: its production) it is the admins' choice too.
 */
export async function requireBranchChangeAccess(db: Db, userId: string, target: { environmentId: string } | { applicationId: string }): Promise<void> {
  const environmentId = 'environmentId' in target
    ? target.environmentId
    : await findProductionEnvironmentId(db, target.applicationId);
  const slug = environmentId ? await lockedOut(db, userId, environmentId) : null;
  if (slug) throw new AppError('FORBIDDEN', `Environment '${slug}' is protected: only workspace admins choose the branch that deploys to it`);
}
